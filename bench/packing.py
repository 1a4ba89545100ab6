"""Packing with document masking against padding, on a length-skewed chat set.

    bench/packing.sh [--rounds 3] [--conversations 3000] [--seq-len 256] [--threads 2] [--json FILE]

The data: chat JSONL (one user and one assistant message per record) whose rendered lengths are
drawn log-uniformly between 20 and seq_len tokens (hftrain's byte tokenizer, so a token is a byte),
most conversations short and a few long, as instruction sets are. A separate validation file of
the same shape.

Contenders, interleaved A B A B ... for --rounds rounds, one epoch each from a warm token cache,
the GPT-2 shape of bench/peers (4 layers, d_model 256, seq_len 256, micro-batch 8), AdamW at a
constant learning rate, the same seed:
  pack  data.packing=pack, data.document_mask=true (the default for chat data): rows full of
        whole conversations, each attended and positioned on its own.
  pad   data.packing=pad: one conversation per row, the batch padded to its longest row.
Throughput is the epoch's conversation tokens (the cache's token count, padding not counted) over
the process's wall time. The ratio is pad's time over pack's. The loss curves are printed side by
side at tenths of the epoch (mean training loss of the steps in that tenth), with each run's
validation loss at the end: masking keeps the conversations apart, so both modes learn the same
thing from the same tokens.
"""
import argparse
import json
import math
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "conformance"))
from token_cache_file import read_cache  # noqa: E402

WORDS = ("the a model learns from data when every token counts and nothing leaks across documents "
         "packing joins short conversations into full rows while padding wastes the rest of each row "
         "question answer please explain why how what which step loss rate batch sequence attention").split()
OVERHEAD = len("<|user|>\n\n<|assistant|>\n\n") + 1  # hftrain's built-in chat rendering, plus end-of-text


def text_of(rng, n):
    out = []
    size = 0
    while size < n:
        w = rng.choice(WORDS)
        out.append(w)
        size += len(w) + 1
    return " ".join(out)[:max(n, 1)]


def make_chat(path, count, seq_len, seed):
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as f:
        for _ in range(count):
            total = int(math.exp(rng.uniform(math.log(20), math.log(seq_len))))
            content = max(total - OVERHEAD, 2)
            user = max(content // 3, 1)
            record = {"messages": [{"role": "user", "content": text_of(rng, user)},
                                   {"role": "assistant", "content": text_of(rng, content - user)}]}
            f.write(json.dumps(record) + "\n")


RECIPE = """# The hftrain side of bench/packing.py: the shape of bench/peers' GPT-2 on chat data.
run: {{name: packing-bench, seed: 7}}
model: {{arch: gpt2, n_layer: 4, n_head: 4, d_model: 256, max_seq_len: {seq}, vocab_size: 260}}
tokenizer: {{type: byte}}
data: {{train: [{train}], validation: [{val}], format: chat, seq_len: {seq}, cache_dir: {cache}}}
optimizer: {{name: adamw, lr: 1.0e-3, weight_decay: 0.0}}
scheduler: {{name: constant}}
trainer: {{max_epochs: 1, micro_batch_size: 8, log_every: 1, eval_every: 1000000, max_grad_norm: 1.0}}
checkpoint: {{at_end: false}}
"""


def run_hftrain(args, work, mode, round_no):
    out = os.path.join(work, f"{mode}-{round_no}")
    cmd = [args.hftrain, "run", os.path.join(work, "recipe.yaml"), f"data.packing={mode}",
           f"run.output_dir={out}", f"data.num_workers={args.threads}"]
    if mode == "pack":
        cmd.append("data.document_mask=true")
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    start = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    if p.returncode != 0:
        sys.exit(f"hftrain run ({mode}) failed:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    records = [json.loads(line) for line in open(os.path.join(out, "metrics.jsonl"))]
    steps = [r for r in records if r.get("type") == "train"]
    evals = [r for r in records if r.get("type") == "eval"]
    return {"wall": wall, "steps": steps, "eval_loss": evals[-1]["eval_loss"] if evals else None}


def curve(steps, parts=10):
    n = len(steps)
    return [statistics.mean(s["loss"] for s in steps[k * n // parts:max((k + 1) * n // parts, k * n // parts + 1)])
            for k in range(parts)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hftrain", default=os.path.join(ROOT, "build", "apps", "hftrain", "hftrain"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--conversations", type=int, default=3000)
    ap.add_argument("--seq-len", type=int, default=256)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--work")
    ap.add_argument("--json")
    args = ap.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="hftrain-packing-bench-")
    train, val = os.path.join(work, "train.jsonl"), os.path.join(work, "val.jsonl")
    make_chat(train, args.conversations, args.seq_len, 1)
    make_chat(val, max(args.conversations // 10, 50), args.seq_len, 2)
    cache = os.path.join(work, "cache")
    with open(os.path.join(work, "recipe.yaml"), "w") as f:
        f.write(RECIPE.format(seq=args.seq_len, train=train, val=val, cache=cache))
    # Warm the token cache (and learn the corpus's true lengths from it).
    subprocess.run([args.hftrain, "prepare", os.path.join(work, "recipe.yaml")], check=True, capture_output=True)
    caches = sorted(os.path.join(cache, f) for f in os.listdir(cache))
    train_cache = max(caches, key=os.path.getsize)
    _, _, starts = read_cache(train_cache)
    lengths = [b - a for a, b in zip(starts, starts[1:])]
    tokens = starts[-1]
    print(f"data: {len(lengths)} conversations, {tokens} tokens; length min {min(lengths)}, median "
          f"{statistics.median(lengths)}, mean {statistics.mean(lengths):.0f}, max {max(lengths)} "
          f"(seq_len {args.seq_len})")

    runs = {"pack": [], "pad": []}
    for r in range(args.rounds):
        for mode in runs:
            runs[mode].append(run_hftrain(args, work, mode, r))
    rate = {m: [tokens / x["wall"] for x in xs] for m, xs in runs.items()}
    print(f"\nmachine: {platform.machine()}, {os.cpu_count()} cores, {args.threads} threads; "
          f"{args.rounds} rounds; one epoch per run\n")
    print(f"{'contender':<34} {'tokens/s':>9} {'range':>15} {'steps':>6} {'seconds':>8} {'vs pad':>7}")
    base = statistics.median(x["wall"] for x in runs["pad"])
    for mode, label in (("pack", "pack + document mask"), ("pad", "pad")):
        xs = runs[mode]
        wall = statistics.median(x["wall"] for x in xs)
        print(f"{label:<34} {statistics.median(rate[mode]):>9.0f} "
              f"{min(rate[mode]):>7.0f}-{max(rate[mode]):<7.0f} {len(xs[0]['steps']):>6} {wall:>8.2f} "
              f"{base / wall:>6.2f}x")
    print("\ntraining loss by tenth of the epoch (first round), and validation loss at the end:")
    curves = {m: curve(runs[m][0]["steps"]) for m in runs}
    print(f"{'tenth':<6}" + "".join(f"{m:>10}" for m in runs))
    for k in range(10):
        print(f"{k + 1:<6}" + "".join(f"{curves[m][k]:>10.4f}" for m in runs))
    print(f"{'eval':<6}" + "".join(f"{runs[m][0]['eval_loss'] or float('nan'):>10.4f}" for m in runs))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"tokens": tokens, "rate": rate, "curves": curves,
                       "eval_loss": {m: runs[m][0]["eval_loss"] for m in runs}}, f, indent=1)


if __name__ == "__main__":
    main()
