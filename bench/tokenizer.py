"""Tokenization speed: hftrain building its token cache next to the `tokenizers` library.

    bench/tokenizer.sh [--threads N] [--rounds 3] [--mb 20] [--json FILE]

The corpus is real text that every checkout has: the Python sources of the installed transformers
package (English docstrings and code), one JSONL document per file, in sorted order until --mb
megabytes. The tokenizer is a byte-level BPE tokenizer.json (GPT-2's pre-tokenizer, 32000 ids)
that `tokenizers` trains on that corpus once.

Contenders, interleaved A B C A B C ... for --rounds rounds at the same thread count:
  hftrain     `hftrain prepare` into an empty cache folder with data.num_workers=N: reads the JSONL,
              encodes, writes the cache file. Its own figure (the seconds it reports for reading and
              encoding) and the whole process's wall time are both shown.
  tokenizers  Tokenizer.encode_batch (and encode_batch_fast where the version has it) over the same
              document texts with RAYON_NUM_THREADS=N, after reading the JSONL (not timed), with
              encode_special_tokens on (special-token text in a document is text, as in hftrain).
Throughput is megabytes of document text per second; the ratio is the peer's time over hftrain's.
The tokens are checked equal first: the cache file's ids must be the peer's ids plus one end-of-text
token per document.
"""
import argparse
import glob
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "conformance"))
from token_cache_file import read_cache  # noqa: E402
VOCAB = 32000

PEER = r"""
import json, sys, time
from tokenizers import Tokenizer
tok = Tokenizer.from_file(sys.argv[1])
# Special-token text inside a document stays text, as in hftrain's data path (data cannot inject
# control tokens): "<|endoftext|>" quoted in a docstring is not the end-of-text id.
tok.encode_special_tokens = True
texts = [json.loads(line)["text"] for line in open(sys.argv[2], encoding="utf-8")]
out = {}
for name in sys.argv[3].split(","):
    fn = getattr(tok, name, None)
    if fn is None:
        continue
    start = time.perf_counter()
    encs = fn(texts)
    out[name] = time.perf_counter() - start
    if len(sys.argv) > 4:
        with open(sys.argv[4], "w") as f:
            json.dump([e.ids for e in encs], f)
print(json.dumps(out))
"""

TRAIN = r"""
import json, sys
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
tok = Tokenizer(models.BPE())
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.decoder = decoders.ByteLevel()
trainer = trainers.BpeTrainer(vocab_size=int(sys.argv[3]), special_tokens=["<|endoftext|>"],
                              initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
texts = [json.loads(line)["text"] for line in open(sys.argv[1], encoding="utf-8")]
tok.train_from_iterator(texts, trainer)
tok.save(sys.argv[2])
"""


def make_corpus(python, path, megabytes):
    pkg = subprocess.run([python, "-c", "import transformers, os; print(os.path.dirname(transformers.__file__))"],
                         check=True, capture_output=True, text=True).stdout.strip()
    total = 0
    docs = 0
    with open(path, "w", encoding="utf-8") as out:
        for file in sorted(glob.glob(os.path.join(pkg, "**", "*.py"), recursive=True)):
            text = open(file, encoding="utf-8", errors="replace").read()
            if not text.strip():
                continue
            out.write(json.dumps({"text": text}, ensure_ascii=False) + "\n")
            total += len(text.encode("utf-8"))
            docs += 1
            if total >= megabytes * 1e6:
                break
    return total, docs


def run_hftrain(args, work, corpus, tokenizer, check=False):
    cache = tempfile.mkdtemp(dir=work, prefix="cache-")
    recipe = os.path.join(work, "tokenize.yaml")
    with open(recipe, "w") as f:
        f.write("# The hftrain side of bench/tokenizer.py: everything else comes from the overrides.\n"
                "run:\n  name: tokenize\ntrainer:\n  max_steps: 1\n")
    cmd = [args.hftrain, "prepare", recipe, "tokenizer.type=bpe", f"tokenizer.path={tokenizer}",
           f"data.train=[{corpus}]", "data.validation=[]", "data.validation_fraction=0", "data.exclude=[]",
           "data.format=jsonl", f"data.num_workers={args.threads}", f"data.cache_dir={cache}"]
    start = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if p.returncode != 0:
        sys.exit(f"hftrain prepare failed:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    m = re.search(r"in ([0-9.]+) s \(", p.stdout)
    files = glob.glob(os.path.join(cache, "tokens-*.bin"))
    result = dict(seconds=float(m.group(1)), wall=wall)
    if check:
        result["cache"] = files[0]
    else:
        for f in files:
            os.remove(f)
    return result


def run_peer(args, corpus, tokenizer, methods, dump=None):
    env = dict(os.environ, RAYON_NUM_THREADS=str(args.threads), TOKENIZERS_PARALLELISM="true")
    cmd = [args.python, "-c", PEER, tokenizer, corpus, methods] + ([dump] if dump else [])
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"tokenizers peer failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def check_equal(args, work, corpus, tokenizer):
    dump = os.path.join(work, "peer-ids.json")
    run_peer(args, corpus, tokenizer, "encode_batch", dump)
    peer = json.load(open(dump))
    got = run_hftrain(args, work, corpus, tokenizer, check=True)
    ids, _, starts = read_cache(got["cache"])
    if len(starts) - 1 != len(peer):
        sys.exit(f"document count differs: hftrain {len(starts) - 1}, tokenizers {len(peer)}")
    for d, want in enumerate(peer):
        have = list(ids[starts[d]:starts[d + 1] - 1])
        if have != want:
            at = next((i for i, (a, b) in enumerate(zip(have, want)) if a != b), min(len(have), len(want)))
            sys.exit(f"document {d}: ids differ at token {at} (hftrain {have[at:at + 5]}, tokenizers {want[at:at + 5]})")
    os.remove(got["cache"])
    return sum(len(p) for p in peer)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--hftrain", default=os.path.join(ROOT, "build", "apps", "hftrain", "hftrain"))
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--mb", type=float, default=20.0)
    ap.add_argument("--work", help="folder for the corpus, tokenizer and caches (default: a temporary one)")
    ap.add_argument("--json", help="write every figure here")
    args = ap.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="hftrain-tokenizer-bench-")
    os.makedirs(work, exist_ok=True)
    corpus = os.path.join(work, "corpus.jsonl")
    tokenizer = os.path.join(work, "tokenizer.json")
    if not os.path.exists(corpus):
        make_corpus(args.python, corpus, args.mb)
    if not os.path.exists(tokenizer):
        subprocess.run([args.python, "-c", TRAIN, corpus, tokenizer, str(VOCAB)], check=True)
    text_bytes = sum(len(json.loads(line)["text"].encode("utf-8")) for line in open(corpus, encoding="utf-8"))
    docs = sum(1 for _ in open(corpus, encoding="utf-8"))
    tokens = check_equal(args, work, corpus, tokenizer)
    print(f"corpus: {text_bytes / 1e6:.1f} MB of text in {docs} documents, {tokens} tokens; same ids from both")

    times = {"hftrain": [], "hftrain (process)": []}
    for _ in range(args.rounds):
        h = run_hftrain(args, work, corpus, tokenizer)
        times["hftrain"].append(h["seconds"])
        times["hftrain (process)"].append(h["wall"])
        for name, seconds in run_peer(args, corpus, tokenizer, "encode_batch,encode_batch_fast").items():
            times.setdefault(f"tokenizers {name}", []).append(seconds)

    import tokenizers  # noqa: only for its version
    base = statistics.median(times["hftrain"])
    print(f"\nmachine: {platform.processor() or platform.machine()}, {args.threads} threads, "
          f"tokenizers {tokenizers.__version__}, {args.rounds} rounds\n")
    print(f"{'contender':<30} {'MB/s':>8} {'range':>15} {'seconds':>8} {'vs hftrain':>11}")
    rows = {}
    for name, ts in times.items():
        med = statistics.median(ts)
        rates = [text_bytes / 1e6 / t for t in ts]
        rows[name] = dict(seconds=ts, median_s=med, mb_per_s=text_bytes / 1e6 / med)
        print(f"{name:<30} {text_bytes / 1e6 / med:8.2f} {min(rates):7.2f}-{max(rates):<7.2f} {med:8.3f} "
              f"{med / base:10.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(threads=args.threads, text_bytes=text_bytes, documents=docs, tokens=tokens,
                           tokenizers=tokenizers.__version__, rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
