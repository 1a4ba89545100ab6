#!/usr/bin/env bash
# Benchmark: how long a checkpoint stalls training, saved at once and in the background
# (checkpoint.async), with GPT-2 124M's shapes on the CPU (AdamW: weights and two moments, about
# 1.5 GB a checkpoint). Both runs train 12 steps and save after steps 4, 8 and 12 (the last, written
# at once in both modes, is not in the figures); the metrics records after a save carry
# checkpoint/stall_ms (the steps' time spent saving since the last record: all of a save written at
# once; for a background one the host copy in the record after it, and the publishing a record or
# two later) and checkpoint/write_ms (the background write). Beside them, the time PyTorch takes to copy the same bytes in memory once: a
# background save should stall about that long.
# On a GPU (third argument cuda) the same on the device, and the reference is a copy from the device
# into pinned host memory, which is what a background save's host copy is there.
# Usage: bench/checkpoint_stall.sh [path/to/hftrain] [python with torch] [cpu|cuda]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
hftrain=$(realpath "${1:-$root/build/apps/hftrain/hftrain}")
python=${2:-$root/.venv/bin/python}
device=${3:-cpu}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export HFTRAIN_RECIPES_DIR="$root/recipes" HFTRAIN_CACHE_DIR="$work/cache"
for i in $(seq 1 400); do printf 'Cookie number %d says: a stitch in time saves nine.\n%%\n' "$i"; done > "$work/cookies"
gpt2=(data.train="$work/cookies" "data.separator='%'" data.validation_fraction=0 model.arch=gpt2 model.n_layer=12
      model.n_head=12 model.d_model=768 model.max_seq_len=1024 model.vocab_size=50257 data.seq_len=64
      trainer.micro_batch_size=1 scheduler.warmup_steps=0 trainer.eval_every=0 trainer.log_every=1
      trainer.max_steps=12 checkpoint.every_steps=4 checkpoint.at_end=false checkpoint.keep_last=1 trainer.device=$device)
for mode in sync async; do
  async=false
  [ $mode = async ] && async=true
  "$hftrain" run quickstart "${gpt2[@]}" checkpoint.async=$async run.output_dir="$work/$mode" >"$work/$mode.log" 2>&1 \
    || { tail -5 "$work/$mode.log"; exit 1; }
done
"$python" - "$work" "$device" <<'EOF'
import json, sys, time
import torch
work, device = sys.argv[1], sys.argv[2]
print(f"GPT-2 124M shapes, AdamW, fp32, seq 64, 1 sequence a step, {device}, {torch.get_num_threads()} threads; "
      "saves after steps 4 and 8")
print(f"{'mode':6} {'step ms (median, no save)':>26} {'checkpoint/stall_ms records':>28} {'checkpoint/write_ms':>20}")
for mode in ("sync", "async"):
    recs = [json.loads(l) for l in open(f"{work}/{mode}/metrics.jsonl")]
    steps = [r for r in recs if r.get("type") == "train"]
    stalls = [round(r["checkpoint/stall_ms"]) for r in steps if "checkpoint/stall_ms" in r]
    writes = [round(r["checkpoint/write_ms"]) for r in steps if "checkpoint/write_ms" in r]
    plain = sorted(r["step_time_ms"] for r in steps if "checkpoint/stall_ms" not in r and r["step"] > 1)
    print(f"{mode:6} {plain[len(plain) // 2]:>26.0f} {' '.join(map(str, stalls)):>28} {' '.join(map(str, writes)) or '-':>20}")
import math, struct
latest = open(f"{work}/sync/latest").read().strip()
with open(f"{work}/sync/{latest}/model.safetensors", "rb") as f:  # the header alone (no safetensors package)
    header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
params = sum(math.prod(v["shape"]) for k, v in header.items() if k != "__metadata__")
src = torch.randn(3 * params, device=device)  # weights and AdamW's two moments
dst = torch.empty(3 * params, pin_memory=device == "cuda")
best = 1e9
for _ in range(3):
    t = time.perf_counter()
    dst.copy_(src, non_blocking=device == "cuda")
    if device == "cuda":
        torch.cuda.synchronize()
    best = min(best, time.perf_counter() - t)
where = "from the device into pinned host memory" if device == "cuda" else "in memory"
print(f"PyTorch: one copy of the same {3 * params * 4 / 1e9:.2f} GB {where}: {best * 1000:.0f} ms")
EOF
