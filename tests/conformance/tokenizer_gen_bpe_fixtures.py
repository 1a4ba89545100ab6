"""Emits the byte-level BPE fixtures that tests/tokenizer/test_bpe.cpp checks hftrain against:

  tests/fixtures/data/hf_bpe_tokenizer.json   a tokenizer trained by the `tokenizers` library
  tests/fixtures/data/hf_bpe_expected.json    texts, their ids from `tokenizers`, and the pieces
                                              of tokenizers' ByteLevel pre-tokenizer

Run from the repository root with the project's venv (`pip install tokenizers`):

    .venv/bin/python tests/conformance/tokenizer_gen_bpe_fixtures.py
"""
import json
import os

import tokenizers
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fixtures", "data")

# Accents, CJK, emoji (with joiners and modifiers), runs of spaces/newlines/tabs, digits, symbols,
# contractions, right-to-left scripts, and the special token inside text.
TEXTS = [
    "Hello, world! It's a test: don't panic, we'll see.",
    "Café déjà vu — naïve façade, Ærøskøbing; Ünïcödé.",
    "日本語のテキストと中文文本，还有한국어 문장。",
    "Emoji: 😀🎉👍🏽 and a family 👨‍👩‍👧‍👦, flags 🇫🇷🇯🇵.",
    "Runs   of    spaces\n\n\nand\ttabs\t\t and newlines\r\n   indented\n",
    "Numbers 1234567 ١٢٣ ½ Ⅻ and symbols @#$%^&*()[]{} text.",
    "Ελληνικά, русский текст, עברית, العربية, हिन्दी.",
    "   leading spaces and trailing spaces   ",
    "I'm sure they've said we'd go; you're right, it'll be 'fine'.",
    "one document<|endoftext|>another one",
    "tabs\t\tand\u00a0no-break\u2003em space\u3000ideographic",
    "",
    "x",
    "Zürich → Ωmega ✓ 🚀🚀 ｆｕｌｌｗｉｄｔｈ",
]


def corpus():
    lines = []
    for name in ("quotes", "more"):
        with open(os.path.join(OUT, "fortunes", name), encoding="utf-8") as f:
            lines.extend(t for t in f.read().split("%\n") if t.strip())
    return TEXTS * 4 + lines * 4


def main():
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=420,
        min_frequency=2,
        special_tokens=["<|endoftext|>", "<|pad|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus(), trainer)
    tok.save(os.path.join(OUT, "hf_bpe_tokenizer.json"))
    pre = pre_tokenizers.ByteLevel(add_prefix_space=False)
    expected = {
        "generator": f"tokenizers {tokenizers.__version__}",
        "texts": TEXTS,
        "ids": [tok.encode(t, add_special_tokens=False).ids for t in TEXTS],
        "pretokenized": [[p for p, _ in pre.pre_tokenize_str(t)] for t in TEXTS if "<|" not in t],
        "eot_id": tok.token_to_id("<|endoftext|>"),
    }
    # The pre-tokenizer pieces are listed only for texts without special tokens; keep the lists aligned.
    expected["pretokenized_texts"] = [t for t in TEXTS if "<|" not in t]
    for t, ids in zip(TEXTS, expected["ids"]):
        assert tok.decode(ids, skip_special_tokens=False) == t, t
    with open(os.path.join(OUT, "hf_bpe_expected.json"), "w", encoding="utf-8") as f:
        json.dump(expected, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print("wrote", OUT)


if __name__ == "__main__":
    main()
