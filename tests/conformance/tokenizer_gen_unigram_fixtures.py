"""Emits the Unigram tokenizer.json fixtures that tests/tokenizer/test_hf_tokenizer.cpp checks
hftrain against without Python, and that tokenizer_hf_tokenizers.py builds its Unigram tokenizers from:

  tests/fixtures/data/hf_t5_tokenizer.json          a SentencePiece unigram model trained here
                                                    (nmt_nfkc normalization, 1000 pieces,
                                                    character_coverage 0.995 so that rarer
                                                    characters are unknown) and converted by
                                                    transformers' T5Tokenizer: Precompiled
                                                    normalizer, WhitespaceSplit + Metaspace,
                                                    "$A </s>", <extra_id_N> tokens
  tests/fixtures/data/hf_unigram_bytes_tokenizer.json  a second model trained with byte_fallback
                                                    and a small hand-written normalization rule
                                                    set (hence a small charsmap whose rules show
                                                    how `tokenizers` applies one: multi-character
                                                    and overlapping keys, CR LF, a 1-byte key
                                                    that makes grapheme clusters visible), among
                                                    ALBERT's Replace normalizers and a Lowercase
                                                    (after the charsmap, so that its rules for
                                                    capitals apply), with <0xXX> pieces
  tests/fixtures/data/hf_unigram_expected.json      texts and, per tokenizer, what `tokenizers`
                                                    makes of them (normalized text, ids with
                                                    special tokens as tokens and as text, with
                                                    the post-processor's, decodings)

Training needs the `sentencepiece` package, which the oracle venv does not have; install it
elsewhere and put it on the path. From the repository root:

    .venv/bin/python -m pip install --target /tmp/sp sentencepiece
    PYTHONPATH=/tmp/sp .venv/bin/python tests/conformance/tokenizer_gen_unigram_fixtures.py

The corpus is tokenizer_hf_tokenizers.py's (README, CONTRIBUTING, the fortunes and the test texts), so
a rerun after those change makes different pieces: commit all three files together.
"""
import json
import os
import sys
import tempfile

import sentencepiece as spm
import tokenizers
from sentencepiece import sentencepiece_model_pb2
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
from transformers import T5Tokenizer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tokenizer_gen_hf_fixtures as hf_fixtures  # noqa: E402
import tokenizer_hf_tokenizers as conf  # noqa: E402

OUT = conf.FIXTURES

# The hand-written rules of the byte-fallback model, source -> replacement, as code points.
RULES = [
    ("q", "k"),                      # a 1-byte key: "q" + a combining mark is one cluster under 6 bytes
    ("\u212b", "\u00c5"),            # ANGSTROM SIGN; the shorter key wins over the next one
    ("\u212b\u0301", "\u01fa"),
    ("e\u0301", "\u00e9"),           # keys of two and three characters
    ("o\u0308\u0323", "\u1ee3"),
    ("\r", " "), ("\n", " "), ("\t", " "), ("\u00a0", " "), ("\u3000", " "),
    ("\u200b", ""), ("\u00ad", ""),  # removed
    ("\ufb01", "fi"), ("\u337f", "\u682a\u5f0f\u4f1a\u793e"), ("\u2460", "1"),
    ("\u1161", "\u314f"),            # Hangul V jamo: shows whether L + V is one cluster
    ("\u00a9", "(c)"),               # an Extended_Pictographic of 2 bytes
    ("\u0600", "#"), ("\U000110bd", "#"),  # Prepend characters join what follows
] + [(chr(c), chr(c - 0xFEE0)) for c in range(0xFF01, 0xFF5F)]  # full-width ASCII


def texts():
    return conf.base_texts() + conf.SPECIAL_TEXTS + conf.UNIGRAM_TEXTS


def train(corpus, prefix, **options):
    spm.SentencePieceTrainer.train(input=corpus, model_prefix=prefix, model_type="unigram", minloglevel=2,
                                   **options)
    proto = sentencepiece_model_pb2.ModelProto()
    with open(prefix + ".model", "rb") as f:
        proto.ParseFromString(f.read())
    return proto


def t5(corpus, tmp):
    folder = os.path.join(tmp, "t5")
    os.makedirs(folder)
    train(corpus, os.path.join(folder, "spiece"), vocab_size=1000, character_coverage=0.995,
          pad_id=0, eos_id=1, unk_id=2, bos_id=-1)
    return T5Tokenizer.from_pretrained(folder, extra_ids=3).backend_tokenizer


def unigram_bytes(corpus, tmp):
    rules = os.path.join(tmp, "rules.tsv")
    with open(rules, "w", encoding="utf-8") as f:
        for src, dst in RULES:
            f.write(" ".join(f"{ord(c):X}" for c in src) + "\t" + " ".join(f"{ord(c):X}" for c in dst) + "\n")
    proto = train(corpus, os.path.join(tmp, "bytes"), vocab_size=700, character_coverage=0.99, byte_fallback=True,
                  normalization_rule_tsv=rules, unk_id=0, bos_id=1, eos_id=2, pad_id=3,
                  control_symbols=["[CLS]", "[SEP]"])
    vocab = [(p.piece, p.score) for p in proto.pieces]
    tok = Tokenizer(models.Unigram(vocab, unk_id=proto.trainer_spec.unk_id, byte_fallback=True))
    tok.add_special_tokens([AddedToken(p.piece, special=True, normalized=False)
                            for p in proto.pieces if p.type in (2, 3)])  # unknown and control
    tok.normalizer = normalizers.Sequence([
        normalizers.Replace("``", '"'), normalizers.Replace("''", '"'),
        normalizers.Precompiled(proto.normalizer_spec.precompiled_charsmap), normalizers.Lowercase(),
        normalizers.Replace(Regex(" {2,}"), " ")])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(content=" ", left=1, right=0)])
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS]:0 $A:0 [SEP]:0", pair="[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1",
        special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))])
    return tok


def expected(tok, items):
    """tokenizer_gen_hf_fixtures' expectations, and the normalized text."""
    out = hf_fixtures.expected(tok, items)
    for entry, text in zip(out, items):
        entry["normalized"] = tok.normalizer.normalize_str(text)
    return out


def main():
    items = texts()
    with tempfile.TemporaryDirectory() as tmp:
        corpus = os.path.join(tmp, "corpus.txt")
        conf.corpus(corpus)
        built = {"t5": t5(corpus, tmp), "unigram_bytes": unigram_bytes(corpus, tmp)}
    result = {"generator": f"tokenizers {tokenizers.__version__}, sentencepiece {spm.__version__}",
              "texts": items}
    for name, tok in built.items():
        path = os.path.join(OUT, f"hf_{name}_tokenizer.json")
        tok.save(path)
        # What the file says, not what was built: the C++ test reads the file.
        result[name] = expected(Tokenizer.from_file(path), items)
    with open(os.path.join(OUT, "hf_unigram_expected.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, ensure_ascii=False, indent=0)
        f.write("\n")
    print("wrote", OUT)


if __name__ == "__main__":
    main()
