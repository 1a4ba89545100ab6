"""What the peft conformance scripts (peft_lora.py, qlora.py) share: failures gathered by check(),
hftrain's binaries run with their output returned, a run's per-step losses, a model's logits."""
import json
import os
import subprocess
import sys

import torch

failures = []

# The ids whose logits the scripts compare, and the corpus they train on.
IDS = [72, 101, 108, 108, 111, 32, 116, 104, 101, 114, 101, 33, 10, 84, 104, 101]


def write_corpus(work):
    """A small fortune-style corpus in `work`; returns its path."""
    corpus = os.path.join(work, "corpus.txt")
    with open(corpus, "w", encoding="utf-8") as f:
        for i in range(200):
            f.write(f"The cat {i} sat on the mat. Number {i % 7} came next.\n%\n")
    return corpus


def largest_relative_difference(a, b):
    """The largest |a - b| / |a| over two loss curves; infinity when their lengths differ."""
    return max(abs(x - y) / abs(x) for x, y in zip(a, b)) if a and len(a) == len(b) else float("inf")


def check(condition, message):
    if not condition:
        failures.append(message)


def run(*args, stderr_too=False, **kw):
    """Runs a command; its stdout (and stderr, with stderr_too), or exits naming the failure."""
    p = subprocess.run(list(args), capture_output=True, text=True, **kw)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(args[:3])} ... failed ({p.returncode}):\n{p.stderr[-3000:]}")
    return p.stdout + (p.stderr if stderr_too else "")


def losses_of(run_dir):
    """The loss of each step (rank 0 alone writes metrics.jsonl: one train record per step)."""
    by_step = {}
    with open(os.path.join(run_dir, "metrics.jsonl"), encoding="utf-8") as f:
        for line in f:
            record = json.loads(line)
            if record.get("type") == "train":
                assert record["step"] not in by_step, f"{run_dir}: step {record['step']} logged twice"
                by_step[record["step"]] = record["loss"]
    return [by_step[k] for k in sorted(by_step)]


def logits_of(model, ids):
    with torch.no_grad():
        return model(torch.tensor([ids])).logits[0].float()


def finish(ok_message):
    """The exit code: 1 with every failure on stderr, else 0 with `ok_message`."""
    if failures:
        for m in failures:
            print("FAIL:", m, file=sys.stderr)
        return 1
    print(ok_message)
    return 0
