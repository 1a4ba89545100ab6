"""Start-up on a folder of token shards far larger than memory, as one source of a weighted mixture.

    bench/shards_startup.sh [--gib 100] [--shards 100] [--rounds 3] [--work DIR]

Writes --shards sparse uint16 shards of --gib GiB in all (the file system stores only their
metadata, and the kernel maps their pages on demand, as it does a real shard's: opening and mapping
cost the same), plus a small JSONL source, and runs `hftrain run` on a mixture of the two
({path: shards/, weight: 0.9}, {path: small.jsonl, weight: 0.1}) for two steps of a small GPT-2.
Prints the time from the process's launch to the first step's start (the step's end in
metrics.jsonl minus its duration), the median over --rounds; the token cache of the JSONL source is
warm after the first round. The shards' tokens are all id 0, so the loss means nothing here.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hftrain", default=os.path.join(ROOT, "build", "apps", "hftrain", "hftrain"))
    ap.add_argument("--gib", type=float, default=100)
    ap.add_argument("--shards", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--work")
    args = ap.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="hftrain-shards-bench-")
    shards = os.path.join(work, "shards")
    os.makedirs(shards, exist_ok=True)
    size = int(args.gib * 2**30 / args.shards) // 2 * 2
    for i in range(args.shards):
        with open(os.path.join(shards, f"shard_{i:05d}.bin"), "wb") as f:
            f.truncate(size)
    with open(os.path.join(work, "small.jsonl"), "w") as f:
        for i in range(200):
            f.write(json.dumps({"text": f"a small document number {i} " * 4}) + "\n")
    total = size * args.shards
    print(f"data: {args.shards} shards, {total / 2**30:.1f} GiB ({total // 2:,} uint16 tokens), sparse; "
          f"disk used: {sum(os.stat(os.path.join(shards, n)).st_blocks * 512 for n in os.listdir(shards)) / 2**20:.1f} MiB")
    seconds = []
    for r in range(args.rounds):
        out = os.path.join(work, f"run-{r}")
        cmd = [args.hftrain, "run", "quickstart",
               f"data.train=[{{path: {shards}, weight: 0.9, format: tokens, name: shards}}, "
               f"{{path: {work}/small.jsonl, weight: 0.1}}]",
               "data.validation_fraction=0", "data.exclude=[]", f"data.cache_dir={work}/cache",
               "model.n_layer=2", "model.d_model=64", "model.n_head=2", "model.vocab_size=260", "data.seq_len=128",
               "trainer.max_steps=2", "scheduler.warmup_steps=0", "trainer.log_every=1", "trainer.eval_every=0", "checkpoint.at_end=false",
               "checkpoint.every_steps=0", f"run.output_dir={out}"]
        env = dict(os.environ, HFTRAIN_RECIPES_DIR=os.path.join(ROOT, "recipes"))
        launch = time.time()
        p = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if p.returncode != 0:
            sys.exit(f"hftrain run failed:\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
        steps = [json.loads(l) for l in open(os.path.join(out, "metrics.jsonl"))]
        steps = [s for s in steps if s.get("type") == "train"]
        first = steps[0]["time"] - steps[0]["step_time_ms"] / 1000
        seconds.append(first - launch)
        print(f"round {r + 1}: {seconds[-1]:.2f} s to the first step; "
              f"data/shards/tokens {steps[-1].get('data/shards/tokens')}")
    print(f"start-up (launch to first step), median of {args.rounds}: {statistics.median(seconds):.2f} s")


if __name__ == "__main__":
    main()
