"""ctest "data: Hugging Face tokenizers conformance": hftrain's tokenizer.json support against the
Python `tokenizers` library (tests/requirements-oracles.txt), on tokenizers it builds offline,
trained on a local corpus (the repository's own documents and the multilingual test texts):

  gpt2            byte-level BPE (hftrain's fast BpeTokenizer)
  llama3          byte-level BPE behind Llama-3's Split regex, ignore_merges, <|begin_of_text|>
                  added by the post-processor, <|end_of_text|> ending documents (also BpeTokenizer)
  roberta-nfkc    byte-level BPE with a prefix space, an NFKC normalizer, RobertaProcessing and a
                  <mask> that strips the space before it
  llama2          SentencePiece-style BPE as Llama-2 and Mistral ship it: Prepend + Replace
                  normalizer, byte fallback (<0x00>..<0xFF> in the vocabulary), fused <unk>,
                  "<s> $A" template, Replace / ByteFallback / Fuse / Strip decoder
  llama2-unk      the same without byte fallback: unknown characters become one fused <unk>
  metaspace       the newer layout of the same: a Metaspace pre-tokenizer (prepend_scheme "first")
  bert            BertWordPieceTokenizer (BertNormalizer, BertPreTokenizer, WordPiece, [CLS] $A
                  [SEP]) plus a non-special added token that must be a single word
  wordpiece-mix   WordPiece behind NFC, a regex Replace, Strip, WhitespaceSplit, contiguous
                  Punctuation and single Digits
  wordlevel       WordLevel behind NFKD + Lowercase + StripAccents and the Whitespace pre-tokenizer
  t5              Unigram as transformers converts a SentencePiece model (Precompiled charsmap,
                  WhitespaceSplit + Metaspace, "$A </s>"), the committed fixture
                  (tokenizer_gen_unigram_fixtures.py)
  unigram-bytes   Unigram with byte fallback behind Replace, Lowercase, a hand-written charsmap and
                  a Replace regex, Metaspace, [CLS] $A [SEP] (the other fixture)
  unigram-spm     the t5 pieces and charsmap in the layout older converters wrote (XLM-R, mT5):
                  Precompiled + Strip + Replace, Metaspace "first", <s> $A </s>
  unigram-albert  the same pieces behind ALBERT's normalizers (NFKD, StripAccents, Lowercase)
  unigram-ties    the same pieces all scored alike, so that Viterbi's tie-breaking decides

For every text (accents, CJK, emoji, runs of spaces and newlines, special tokens in the text) it
compares, through tests/tokenizer/tokenizer_tool.cpp: the normalized text and pre-tokenized pieces
(HfTokenizer), the ids with special tokens recognised, with their text encoded as text
(tokenizers' encode_special_tokens), and with the post-processor's tokens added, and the decodings
with and without special tokens. For the lossless tokenizers decode(encode(x)) == x. Then the
normal forms, Lowercase, StripAccents and BertNormalizer over every code point and over random
combining sequences, which checks hftrain's Unicode tables; and the fixtures' two Precompiled
charsmaps over every code point, alone and after and before characters their rules replace, which
checks the grapheme clusters (hf_grapheme_tables.cpp) where they change the output.

Usage: tokenizer_hf_tokenizers.py <path to hftrain_tokenizer_tool>
"""
import base64
import json
import os
import random
import subprocess
import sys
import tempfile

from tokenizers import (AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors,
                        trainers)
from tokenizers.implementations import BertWordPieceTokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "data")

EXTRA_TEXTS = [
    "The quick brown fox jumps over the lazy dog. " * 3,
    "\n\n\n   \t\t  ",
    "ﬁ ligature, 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 math, ① ② ㍿, Å (A + ring) vs Å",
    "Decomposed: e\u0301 a\u0300 o\u0308\u0323 q\u0323\u0307; Hangul 한국어 \u1112\u1161\u11ab",
    "Turkish İstanbul ıi, Greek ΟΔΟΣ Σίσυφος, German STRASSE ß ẞ, ǅ titlecase",
    "Controls\x01\x7f\u200b and \ufffd and zero\u200dwidth joiners",
    "Windows\r\nline\rends\u2028and\u2029separators\u0085next",
    "Supercalifragilisticexpialidocious" * 4 + " word",
    "Digits 0123456789 ٠١٢٣ ⅧⅨ 3.14159 1,000,000",
    "Punctuation!!! ... ?!? «quotes» “curly” — dashes –, ‘ok’",
    "   leading and trailing   ",
    "hftrain is a word, hftrainer is not; Xhftrain neither; (hftrain) is",
    "A <mask> here and<mask>there",
    "tab\tseparated\tvalues\t\tand\u3000ideographic\u00a0spaces",
    "Emoji ZWJ 👩‍💻 🏳️‍🌈 keycap 1️⃣ skin 👋🏿 flags 🇺🇳",
    "日本語の文章です。中文：你好，世界！",
    "",
    " ",
    "a",
]

SPECIAL_TEXTS = [
    "<|endoftext|>start, middle<|endoftext|>end<|endoftext|>",
    "<|begin_of_text|>Title<|end_of_text|><|begin_of_text|> next",
    "<s>Hello</s> <s> spaced </s>",
    "[CLS] question [SEP] answer [SEP][PAD][MASK]",
    "<unk> and <pad>",
    "hftrain<|endoftext|>hftrain [SEP]hftrain",
]


# What Unigram models and Precompiled charsmaps are sensitive to: characters the charsmaps replace
# alone and in grapheme clusters, unknown characters, runs of spaces.
UNIGRAM_TEXTS = [
    "Full-width ＡＢＣ１２３！ and ｑｕｉｃｋ, Ａ\u0301 (A-acute, full width)",
    "Decomposed e\u0301 o\u0308\u0323 q\u0301 q\u0301\u0302 \u212b \u212b\u0301 \u212b\u0302",
    "CRLF\r\nand CR\rand LF\nand tabs\t\there",
    "Arabic \u0627\u0644\u0633\u0651\u064e\u0644\u0627\u0645 \u0600\u0661\u0662 and \U000110bd\U00011083",
    "Hangul jamo \u1100\u1161\u0301 \u1161\u0301 \u1100\u1161\u11a8 and 한국어",
    "Devanagari \u0915\u094d\u0937 \u0939\u093f\u0928\u094d\u0926\u0940 Thai \u0e20\u0e32\u0e29\u0e32\u0e44\u0e17\u0e22",
    "Emoji \u00a9\u200d\u00a9 \u00a9\ufe0f \U0001f469\u200d\U0001f4bb \U0001f1fa\U0001f1f3\U0001f1e9",
    "Runs of spaces:     five, \u3000\u3000 ideographic, \u00a0\u00a0 no-break",
    "Soft\u00adhyphen and zero\u200bwidth, \ufb01ne \u337f \u2460\u2461",
    "Unknown: \u2603\u2604 \U0001d54f \u0d9a\u0dd2 \u16a0\u16a1 <unk> ☃ \u4e00\u9fa5",
    "Numbers 12,345.67 and 1e-5, Greek \u03b1\u03b2\u03b3, Cyrillic \u043f\u0440\u0438\u0432\u0435\u0442",
    "``Quoted'' text and ``more''",
]


def base_texts():
    with open(os.path.join(FIXTURES, "hf_bpe_expected.json"), encoding="utf-8") as f:
        return json.load(f)["texts"] + EXTRA_TEXTS


def corpus(path):
    parts = []
    for name in ("README.md", "CONTRIBUTING.md"):
        p = os.path.join(ROOT, name)
        if os.path.exists(p):
            with open(p, encoding="utf-8") as f:
                parts.append(f.read())
    for name in ("quotes", "more"):
        with open(os.path.join(FIXTURES, "fortunes", name), encoding="utf-8") as f:
            parts.append(f.read())
    parts.extend(base_texts() * 3)
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(parts))


def byte_tokens():
    return [f"<0x{b:02X}>" for b in range(256)]


def gpt2(corpus_path):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    tok.train([corpus_path], trainers.BpeTrainer(vocab_size=900, special_tokens=["<|endoftext|>"],
                                                 initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                                 show_progress=False))
    return tok


LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                  r"|\s*[\r\n]+|\s+(?!\S)|\s+")


def llama3(corpus_path):
    tok = Tokenizer(models.BPE(ignore_merges=True))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    tok.train([corpus_path], trainers.BpeTrainer(vocab_size=900, special_tokens=["<|begin_of_text|>", "<|end_of_text|>"],
                                                 initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                                 show_progress=False))
    bos = tok.token_to_id("<|begin_of_text|>")
    tok.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A <|begin_of_text|> $B",
                                      special_tokens=[("<|begin_of_text|>", bos)])])
    return tok


def roberta_nfkc(corpus_path):
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    tok.decoder = decoders.ByteLevel()
    specials = ["<s>", "<pad>", "</s>", "<unk>"]
    tok.train([corpus_path], trainers.BpeTrainer(vocab_size=800, special_tokens=specials,
                                                 initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                                 show_progress=False))
    tok.add_special_tokens([AddedToken("<mask>", lstrip=True, special=True)])
    tok.post_processor = processors.RobertaProcessing(("</s>", tok.token_to_id("</s>")), ("<s>", tok.token_to_id("<s>")))
    return tok


def sentencepiece_bpe(corpus_path, byte_fallback, metaspace):
    """A Llama-2 layout: <unk> <s> </s>, then <0x00>..<0xFF>, then the trained pieces."""
    trainer_tok = Tokenizer(models.BPE())
    trainer_tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    trainer_tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="never")
    # A small alphabet, so that rarer characters (CJK, emoji) need the byte fallback or <unk>.
    trainer_tok.train([corpus_path], trainers.BpeTrainer(vocab_size=700, limit_alphabet=90, show_progress=False))
    trained = json.loads(trainer_tok.to_str())["model"]
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    if byte_fallback:
        for t in byte_tokens():
            vocab[t] = len(vocab)
    for token, _ in sorted(trained["vocab"].items(), key=lambda kv: kv[1]):
        if token not in vocab:
            vocab[token] = len(vocab)
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in trained["merges"]]
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>", fuse_unk=True, byte_fallback=byte_fallback))
    tok.add_special_tokens([AddedToken("<unk>", special=True, normalized=False),
                            AddedToken("<s>", special=True, normalized=False),
                            AddedToken("</s>", special=True, normalized=False)])
    if metaspace:
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=False)
    else:
        tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(content=" ", left=1, right=0)])
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", 1)])
    return tok


def bert(corpus_path):
    wp = BertWordPieceTokenizer(clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True)
    wp.train([corpus_path], vocab_size=900, min_frequency=2, show_progress=False, limit_alphabet=300)
    tok = Tokenizer.from_str(wp._tokenizer.to_str())
    tok.add_tokens([AddedToken("hftrain", single_word=True, special=False)])
    return tok


def wordpiece_mix(corpus_path):
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]", max_input_chars_per_word=40))
    tok.normalizer = normalizers.Sequence([normalizers.NFC(), normalizers.Replace(Regex(r"\s+"), " "),
                                           normalizers.Strip()])
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(),
                                                 pre_tokenizers.Punctuation(behavior="contiguous"),
                                                 pre_tokenizers.Digits(individual_digits=True)])
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=False)
    tok.train([corpus_path], trainers.WordPieceTrainer(vocab_size=800, special_tokens=["[UNK]", "[CLS]", "[SEP]"],
                                                       show_progress=False))
    tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
                                                       special_tokens=[("[CLS]", tok.token_to_id("[CLS]")),
                                                                       ("[SEP]", tok.token_to_id("[SEP]"))])
    return tok


def wordlevel(corpus_path):
    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.normalizer = normalizers.Sequence([normalizers.NFKD(), normalizers.Lowercase(), normalizers.StripAccents()])
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train([corpus_path], trainers.WordLevelTrainer(vocab_size=600, special_tokens=["<unk>", "</s>"],
                                                       show_progress=False))
    return tok


def unigram_fixture(name):
    return Tokenizer.from_file(os.path.join(FIXTURES, f"hf_{name}_tokenizer.json"))


def unigram_parts():
    """The t5 fixture's pieces, unk_id and charsmap."""
    doc = json.loads(unigram_fixture("t5").to_str())
    return [tuple(p) for p in doc["model"]["vocab"]], doc["model"]["unk_id"], doc["normalizer"]["precompiled_charsmap"]


def unigram_variant(kind):
    pieces, unk_id, charsmap = unigram_parts()
    precompiled = normalizers.Precompiled(base64.b64decode(charsmap))
    if kind == "ties":
        pieces = [(p, 0.0 if i <= unk_id else -1.0) for i, (p, _) in enumerate(pieces)]
    pieces += [("<s>", 0.0)]
    tok = Tokenizer(models.Unigram(pieces, unk_id=unk_id, byte_fallback=False))
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in ("<pad>", "</s>", "<unk>", "<s>")])
    if kind == "albert":
        tok.normalizer = normalizers.Sequence([
            normalizers.Replace("``", '"'), normalizers.Replace("''", '"'), normalizers.NFKD(), normalizers.StripAccents(),
            normalizers.Lowercase(), precompiled, normalizers.Replace(Regex(" {2,}"), " ")])
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
        tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    else:
        tok.normalizer = normalizers.Sequence([precompiled, normalizers.Strip(left=False, right=True),
                                               normalizers.Replace(Regex(" {2,}"), "▁")])
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=kind == "ties")
        tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="first")
    s, e = tok.token_to_id("<s>"), tok.token_to_id("</s>")
    tok.post_processor = processors.TemplateProcessing(single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>",
                                                       special_tokens=[("<s>", s), ("</s>", e)])
    return tok


def run_tool(tool, command, tokenizer_json, texts, tmp):
    path = os.path.join(tmp, "texts.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(texts, f, ensure_ascii=False)
    out = subprocess.run([tool, command, tokenizer_json, path], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{command} {tokenizer_json} failed:\n{out.stderr}")
    return json.loads(out.stdout)


def encode_plain(tok, text):
    tok.encode_special_tokens = True
    try:
        return tok.encode(text, add_special_tokens=False).ids
    finally:
        tok.encode_special_tokens = False


def compare(name, tok, got, texts, lossless, expect_class):
    failures = []

    def check(what, text, ours, theirs):
        if ours != theirs:
            failures.append(f"{name}: {what} differ for {text!r}:\n  hftrain    {ours!r}\n  tokenizers {theirs!r}")

    if got["class"] != expect_class:
        failures.append(f"{name}: loaded as {got['class']}, expected {expect_class}")
    for text, g in zip(texts, got["texts"]):
        ids = tok.encode(text, add_special_tokens=False).ids
        check("ids", text, g["ids"], ids)
        check("ids with special tokens as text", text, g["plain"], encode_plain(tok, text))
        with_special = tok.encode(text, add_special_tokens=True).ids
        check("ids with the post-processor's tokens", text, g["with_special"], with_special)
        decoded = tok.decode(ids, skip_special_tokens=False)
        if "\ufffd" not in decoded or "\ufffd" in text:  # hftrain keeps cut characters' bytes instead
            check("decode", text, g["decoded"], decoded)
        skipped = tok.decode(with_special, skip_special_tokens=True)
        if "\ufffd" not in skipped or "\ufffd" in text:
            check("decode skipping special tokens", text, g["decoded_skip"], skipped)
        if "normalized" in g:
            norm = tok.normalizer.normalize_str(text) if tok.normalizer else text
            check("normalized text", text, g["normalized"], norm)
            pieces = [p for p, _ in tok.pre_tokenizer.pre_tokenize_str(norm)] if tok.pre_tokenizer else [norm]
            pieces = [p for p in pieces if p]
            check("pre-tokenized pieces", text, g["pre_tokenized"], pieces)
        if lossless:
            check("decode(encode(x)) (hftrain)", text, g["decoded_plain"], text)
            check("decode(encode(x)) (tokenizers)", text, tok.decode(encode_plain(tok, text), skip_special_tokens=False),
                  text)
    return failures


def unicode_sweep(tool, tmp):
    """Normal forms and the other Unicode normalizers over every code point and random combining
    sequences, through one-normalizer tokenizers (WordLevel with an empty vocabulary but <unk>)."""
    cps = [cp for cp in range(0x20, 0x110000) if not 0xD800 <= cp <= 0xDFFF]
    chunks = ["".join(chr(c) for c in cps[i:i + 2000]) for i in range(0, len(cps), 2000)]
    rng = random.Random(6)
    marks = [0x300, 0x301, 0x308, 0x323, 0x327, 0x328, 0x31B, 0x345, 0x5B0, 0x93C, 0x94D, 0x3099, 0x309A, 0x1DCE]
    bases = "aeiouAEIOUnNcCsSzZyYwWωΩαΑιΙυΥεηοあかはカハ\u1100\u1161\u11a8한" + "".join(chr(c) for c in (0x0915, 0x0B47, 0x0DD9))
    randoms = []
    for _ in range(300):
        s = ""
        for _ in range(rng.randint(1, 12)):
            s += rng.choice(bases) + "".join(chr(rng.choice(marks)) for _ in range(rng.randint(0, 3)))
        randoms.append(s)
    texts = chunks + randoms
    failures = []
    for label, norm in [("NFC", normalizers.NFC()), ("NFD", normalizers.NFD()), ("NFKC", normalizers.NFKC()),
                        ("NFKD", normalizers.NFKD()), ("Lowercase", normalizers.Lowercase()),
                        ("StripAccents", normalizers.StripAccents()), ("BertNormalizer", normalizers.BertNormalizer()),
                        ("NMT", normalizers.Nmt())]:
        failures += compare_normalizer(tool, tmp, label, norm, texts)
    return failures


def compare_normalizer(tool, tmp, label, norm, texts, hint=""):
    """`norm` in hftrain (a WordLevel tokenizer around it, with an empty vocabulary but <unk>)
    against `tokenizers` on `texts`; the differences, the first few with where they start."""
    tok = Tokenizer(models.WordLevel(vocab={"<unk>": 0, "</s>": 1}, unk_token="<unk>"))
    tok.add_special_tokens(["</s>"])
    tok.normalizer = norm
    path = os.path.join(tmp, f"norm-{label}.json")
    tok.save(path)
    got = run_tool(tool, "inspect", path, texts, tmp)
    failures = []
    bad = 0
    for text, g in zip(texts, got["texts"]):
        want = norm.normalize_str(text)
        if g["normalized"] != want:
            bad += 1
            if bad <= 3:
                diff = next((i for i, (a, b) in enumerate(zip(g["normalized"], want)) if a != b),
                            min(len(g["normalized"]), len(want)))
                failures.append(f"{label}: differs at char {diff} of a {len(text)}-char text: hftrain "
                                f"{g['normalized'][max(0, diff - 3):diff + 5]!r}, tokenizers {want[max(0, diff - 3):diff + 5]!r}")
    if bad:
        failures.append(f"{label}: {bad} of {len(texts)} texts differ{hint}")
    return failures


def precompiled_sweep(tool, tmp):
    """The two fixtures' charsmaps alone (a WordLevel tokenizer around the Precompiled normalizer)
    over every code point X, in runs and as probes that `tokenizers` answers differently when X
    joins a grapheme cluster: after a character the charsmap replaces (a cluster under 6 bytes is
    replaced whole, so X vanishes), and before a Hangul vowel with an accent (X is L or LV)."""
    cps = [cp for cp in range(0x20, 0x110000) if not 0xD800 <= cp <= 0xDFFF]
    chunks = ["".join(chr(c) for c in cps[i:i + 2000]) for i in range(0, len(cps), 2000)]
    rng = random.Random(7)
    pool = ("aeqAQ\r\n\t \u00a0\u00a9\u0301\u0308\u0323\u093f\u094d\u0915\u0937\u1100\u1161\u11a8\uac00\uac01"
            "\u200d\ufe0f\u0600\u212b\uff21\uff51\u3000\U0001f469\U0001f4bb\U0001f1fa\U0001f3fb\u0e33\u0903")
    randoms = ["".join(rng.choice(pool) for _ in range(rng.randint(1, 12))) for _ in range(2000)]
    probes = {
        "t5": [f"\u00a0{chr(c)}" for c in cps if c < 0x10000] + [f"\uff21{chr(c)}" for c in cps if c < 0x800],
        "unigram_bytes": [f"q{chr(c)}" for c in cps] + [f"{chr(c)}\u1161\u0301" for c in cps],
    }
    failures = []
    for name, probe in probes.items():
        doc = json.loads(unigram_fixture(name).to_str())
        found = [n for n in [doc["normalizer"]] + doc["normalizer"].get("normalizers", []) if n["type"] == "Precompiled"]
        norm = normalizers.Precompiled(base64.b64decode(found[0]["precompiled_charsmap"]))
        texts = chunks + ["\n".join(probe[i:i + 1000]) for i in range(0, len(probe), 1000)] + randoms
        failures += compare_normalizer(tool, tmp, f"Precompiled-{name}", norm, texts,
                                       " (rerun tokenizer_gen_grapheme_tables.py if tokenizers' Unicode version moved)")
    return failures


def main():
    tool = sys.argv[1]
    texts = base_texts() + SPECIAL_TEXTS + UNIGRAM_TEXTS
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        corpus_path = os.path.join(tmp, "corpus.txt")
        corpus(corpus_path)
        built = [
            ("gpt2", gpt2(corpus_path), True, "bpe"),
            ("llama3", llama3(corpus_path), True, "bpe"),
            ("roberta-nfkc", roberta_nfkc(corpus_path), False, "hf"),
            ("llama2", sentencepiece_bpe(corpus_path, byte_fallback=True, metaspace=False), True, "hf"),
            ("llama2-unk", sentencepiece_bpe(corpus_path, byte_fallback=False, metaspace=False), False, "hf"),
            ("metaspace", sentencepiece_bpe(corpus_path, byte_fallback=True, metaspace=True), False, "hf"),
            ("bert", bert(corpus_path), False, "hf"),
            ("wordpiece-mix", wordpiece_mix(corpus_path), False, "hf"),
            ("wordlevel", wordlevel(corpus_path), False, "hf"),
            ("t5", unigram_fixture("t5"), False, "hf"),
            ("unigram-bytes", unigram_fixture("unigram_bytes"), False, "hf"),
            ("unigram-spm", unigram_variant("spm"), False, "hf"),
            ("unigram-albert", unigram_variant("albert"), False, "hf"),
            ("unigram-ties", unigram_variant("ties"), False, "hf"),
        ]
        for name, tok, lossless, expect_class in built:
            path = os.path.join(tmp, f"{name}.json")
            tok.save(path)
            got = run_tool(tool, "inspect", path, texts, tmp)
            found = compare(name, tok, got, texts, lossless, expect_class)
            print(f"{name}: {len(texts)} texts, {len(found)} differences (eot {got['eot']}, pad {got['pad']})")
            failures += found
            # hftrain writes an HfTokenizer back as it read it: tokenizers loads the copy alike.
            copy = os.path.join(tmp, f"{name}-copy.json")
            subprocess.run([tool, "copy", path, copy], check=True)
            again = Tokenizer.from_file(copy)
            if any(again.encode(t).ids != tok.encode(t).ids for t in texts):
                failures.append(f"{name}: the copy hftrain wrote encodes differently")
        sweep = unicode_sweep(tool, tmp)
        print(f"unicode sweep: {len(sweep)} differences")
        failures += sweep
        sweep = precompiled_sweep(tool, tmp)
        print(f"Precompiled sweep: {len(sweep)} differences")
        failures += sweep
    for f in failures[:40]:
        print(f)
    print(f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
