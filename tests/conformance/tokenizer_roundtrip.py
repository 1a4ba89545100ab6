"""ctest "data: tokenizers round trip": hftrain's byte-level BPE against the Python `tokenizers`
library, both ways, with whatever tokenizers version is installed (tests/requirements-oracles.txt).

  1. hftrain trains a tokenizer and saves tokenizer.json; `tokenizers` loads it and must give the
     ids hftrain gives, and decode them back to the text.
  2. `tokenizers` trains a byte-level BPE and saves it; hftrain loads it and must give its ids.
  3. The same for a Llama-3-style tokenizer (Split regex, then ByteLevel without its own split,
     ignore_merges), and hftrain's re-written copy of it loads in `tokenizers` with the same ids.

Usage: tokenizer_roundtrip.py <path to hftrain_tokenizer_tool>
"""
import json
import os
import subprocess
import sys
import tempfile

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "data")


def texts():
    with open(os.path.join(FIXTURES, "hf_bpe_expected.json"), encoding="utf-8") as f:
        base = json.load(f)["texts"]
    extra = ["The quick brown fox jumps over the lazy dog. " * 3, "\n\n\n   \t\t  ", "ﬁ ligature, 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 math"]
    return base + extra


def corpus_text():
    parts = []
    for name in ("quotes", "more"):
        with open(os.path.join(FIXTURES, "fortunes", name), encoding="utf-8") as f:
            parts.append(f.read())
    return "\n".join(parts + texts() * 3)


def hftrain_encode(tool, tokenizer_json, sample, tmp):
    path = os.path.join(tmp, "texts.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(sample, f, ensure_ascii=False)
    out = subprocess.run([tool, "encode", tokenizer_json, path], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def main():
    tool = sys.argv[1]
    sample = texts()
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        corpus = os.path.join(tmp, "corpus.txt")
        with open(corpus, "w", encoding="utf-8") as f:
            f.write(corpus_text())

        # 1. hftrain -> tokenizers
        ours = os.path.join(tmp, "hftrain_tokenizer.json")
        subprocess.run([tool, "train", corpus, "700", ours], check=True)
        theirs = Tokenizer.from_file(ours)
        for text, ids in zip(sample, hftrain_encode(tool, ours, sample, tmp)):
            got = theirs.encode(text, add_special_tokens=False).ids
            if got != ids:
                print(f"hftrain-trained: ids differ for {text!r}:\n  hftrain   {ids}\n  tokenizers {got}")
                failures += 1
            if theirs.decode(ids, skip_special_tokens=False) != text:
                print(f"hftrain-trained: tokenizers does not decode {text!r} back")
                failures += 1

        # 2. tokenizers -> hftrain
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=700, min_frequency=2, special_tokens=["<|endoftext|>", "<|pad|>"],
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
        tok.train([corpus], trainer)
        foreign = os.path.join(tmp, "tokenizers_tokenizer.json")
        tok.save(foreign)
        for text, ids in zip(sample, hftrain_encode(tool, foreign, sample, tmp)):
            want = tok.encode(text, add_special_tokens=False).ids
            if want != ids:
                print(f"tokenizers-trained: ids differ for {text!r}:\n  hftrain   {ids}\n  tokenizers {want}")
                failures += 1
        # 3. tokenizers -> hftrain, Llama-3 style: a Split regex (lookaheads, \p{..} classes: PCRE2 in
        #    hftrain) before a ByteLevel that does not split again, and ignore_merges.
        from tokenizers import Regex
        llama3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                  r"|\s*[\r\n]+|\s+(?!\S)|\s+")
        tok3 = Tokenizer(models.BPE(ignore_merges=True))
        tok3.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(llama3), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
        tok3.decoder = decoders.ByteLevel()
        tok3.train([corpus], trainer)
        regex_json = os.path.join(tmp, "llama3_style_tokenizer.json")
        tok3.save(regex_json)
        for text, ids in zip(sample, hftrain_encode(tool, regex_json, sample, tmp)):
            want = tok3.encode(text, add_special_tokens=False).ids
            if want != ids:
                print(f"Llama-3-style: ids differ for {text!r}:\n  hftrain   {ids}\n  tokenizers {want}")
                failures += 1
        # hftrain writes it back the same way: tokenizers loads hftrain's copy and agrees.
        copy = os.path.join(tmp, "llama3_style_copy.json")
        subprocess.run([tool, "copy", regex_json, copy], check=True)
        again = Tokenizer.from_file(copy)
        for text in sample:
            if again.encode(text, add_special_tokens=False).ids != tok3.encode(text, add_special_tokens=False).ids:
                print(f"Llama-3-style copy written by hftrain encodes {text!r} differently")
                failures += 1
    print(f"{len(sample)} texts, three tokenizers: {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
