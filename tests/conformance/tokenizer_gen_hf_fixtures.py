"""Emits the tokenizer.json fixtures that tests/tokenizer/test_hf_tokenizer.cpp checks hftrain against
without Python:

  tests/fixtures/data/hf_llama2_tokenizer.json   Llama-2 layout (Prepend + Replace, byte fallback)
  tests/fixtures/data/hf_bert_tokenizer.json     BertWordPieceTokenizer, plus a single-word token
  tests/fixtures/data/hf_pipeline_expected.json  texts and, per tokenizer, what `tokenizers` makes
                                                 of them (ids with special tokens as tokens and as
                                                 text, with the post-processor's, decodings)

The tokenizers are those of tokenizer_hf_tokenizers.py, trained on the same local corpus. Run from the
repository root with the project's venv:

    .venv/bin/python tests/conformance/tokenizer_gen_hf_fixtures.py
"""
import json
import os
import sys
import tempfile

import tokenizers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tokenizer_hf_tokenizers as conf  # noqa: E402

OUT = os.path.join(conf.ROOT, "tests", "fixtures", "data")


def expected(tok, texts):
    out = []
    for text in texts:
        ids = tok.encode(text, add_special_tokens=False).ids
        with_special = tok.encode(text, add_special_tokens=True).ids
        out.append({"ids": ids, "plain": conf.encode_plain(tok, text), "with_special": with_special,
                    "decoded": tok.decode(ids, skip_special_tokens=False),
                    "decoded_skip": tok.decode(with_special, skip_special_tokens=True)})
    return out


def main():
    texts = conf.base_texts() + conf.SPECIAL_TEXTS
    with tempfile.TemporaryDirectory() as tmp:
        corpus = os.path.join(tmp, "corpus.txt")
        conf.corpus(corpus)
        built = {"llama2": conf.sentencepiece_bpe(corpus, byte_fallback=True, metaspace=False),
                 "bert": conf.bert(corpus)}
    result = {"generator": f"tokenizers {tokenizers.__version__}", "texts": texts}
    for name, tok in built.items():
        tok.save(os.path.join(OUT, f"hf_{name}_tokenizer.json"))
        result[name] = expected(tok, texts)
    with open(os.path.join(OUT, "hf_pipeline_expected.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, ensure_ascii=False, indent=0)
        f.write("\n")
    print("wrote", OUT)


if __name__ == "__main__":
    main()
