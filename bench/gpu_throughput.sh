#!/usr/bin/env bash
# Benchmark on one GPU: GPT-2 124M (recipes/gpt2-124m.yaml: seq 1024, bf16 autocast, tf32, AdamW,
# clipping) trained by hftrain and by the same step in plain PyTorch (bench/peer_eager.py), on the
# same token shard, in the same session. Prints hftrain's tokens/s, step time, MFU and peak memory
# from its metrics.jsonl (the window of the last 20 steps), the peer's, and their ratio. Also the
# same with activation checkpointing and with zero3 + cpu_offload in one process, which trade
# speed for memory, with galore_adamw (low-rank optimizer state), and with the output layer in the
# CPU's small chunks (HFTRAIN_LM_HEAD_CHUNK_ROWS).
# HFTRAIN_BENCH_PROFILE=DIR adds three profiled steps and copies their ops table into DIR.
# Token ids are random bytes: the cost of a step does not depend on them.
# Usage: bench/gpu_throughput.sh [path/to/hftrain] [micro-batch, default 16] [steps, default 40]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
hftrain=$(realpath "${1:-$root/build/apps/hftrain/hftrain}")
micro=${2:-16}
steps=${3:-40}
py=${HFTRAIN_PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export HFTRAIN_RECIPES_DIR="$root/recipes" HFTRAIN_CACHE_DIR="$work/cache"
"$py" -c "
import torch
torch.manual_seed(0)
torch.randint(0, 256, (40_000_000,), dtype=torch.int16).numpy().tofile('$work/train.bin')
" 2>/dev/null || "$py" -c "
import random, array
random.seed(0)
array.array('H', (random.randrange(256) for _ in range(40_000_000))).tofile(open('$work/train.bin', 'wb'))
"
common=("data.train=[$work/train.bin]" "data.validation=[]" data.validation_fraction=0 tokenizer.type=byte
        trainer.micro_batch_size="$micro" trainer.grad_accum_steps=1 trainer.max_tokens=null trainer.max_steps="$steps"
        trainer.log_every=10 trainer.eval_every=0 scheduler.warmup_steps=5 checkpoint.at_end=false
        checkpoint.every_steps=0 trainer.device=cuda)
report() {  # report LABEL RUN_DIR: the last step record of a run
  "$py" - "$1" "$2/metrics.jsonl" <<'PY'
import json, sys
r = [r for r in map(json.loads, open(sys.argv[2])) if r["type"] == "train"][-1]
print(json.dumps({"run": sys.argv[1], "tokens_per_s": round(r["tokens_per_s"]), "step_time_ms": round(r["step_time_ms"], 1),
                  "mfu": r["mfu"], "peak_mem_mb": round(r["peak_mem_mb"]), "data_wait_ms": r["data_wait_ms"],
                  "loss": r["loss"]}))
PY
}
echo "GPT-2 124M, micro-batch $micro x 1024 tokens, $steps steps, bf16, $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
"$hftrain" run gpt2-124m "${common[@]}" run.output_dir="$work/hftrain" >"$work/hftrain.log" 2>&1 \
  || { tail -20 "$work/hftrain.log"; exit 1; }
report hftrain "$work/hftrain" | tee "$work/ours.json"
"$py" "$root/bench/peer_eager.py" --shard "$work/train.bin" --micro-batch "$micro" --warmup-steps 20 --steps "$((steps - 20))" \
  | tee "$work/peer.json"
"$py" - "$work/ours.json" "$work/peer.json" <<'PY'
import json, sys
ours, peer = (json.load(open(p)) for p in sys.argv[1:])
print(f"hftrain / pytorch eager: tokens/s x{ours['tokens_per_s'] / peer['tokens_per_s']:.3f}, "
      f"peak memory x{ours['peak_mem_mb'] / peer['peak_mem_mb']:.3f}")
PY
"$hftrain" run gpt2-124m "${common[@]}" model.activation_checkpointing=true run.output_dir="$work/ckpt" \
  >"$work/ckpt.log" 2>&1 && report "hftrain, activation checkpointing" "$work/ckpt"
"$hftrain" run gpt2-124m "${common[@]}" distributed.strategy=zero3 distributed.cpu_offload=true \
  run.output_dir="$work/offload" >"$work/offload.log" 2>&1 && report "hftrain, zero3 + cpu_offload (1 GPU)" "$work/offload"
# GaLore AdamW at rank 128 on the attention and MLP matrices: its optimizer state against AdamW's.
"$hftrain" run gpt2-124m "${common[@]}" optimizer.name=galore_adamw optimizer.galore.rank=128 \
  optimizer.galore.update_proj_gap=200 run.output_dir="$work/galore" >"$work/galore.log" 2>&1 \
  && report "hftrain, galore_adamw rank 128" "$work/galore" || tail -5 "$work/galore.log"
# The output layer in the CPU's chunk size (32 MiB of logits: 166 rows here), as before GPUs got
# chunks of 1 GiB: what that change is worth.
HFTRAIN_LM_HEAD_CHUNK_ROWS=166 "$hftrain" run gpt2-124m "${common[@]}" run.output_dir="$work/small-chunks" \
  >"$work/small-chunks.log" 2>&1 && report "hftrain, output layer in 166-row chunks" "$work/small-chunks"
# HFTRAIN_BENCH_PROFILE=DIR: steps 11-13 under the profiler; its ops table (kernels by total time)
# lands in DIR/ops-hftrain.tsv.
if [ -n "${HFTRAIN_BENCH_PROFILE:-}" ]; then
  HFTRAIN_PROFILE="$work/profile" HFTRAIN_PROFILE_STEPS=11:13 "$hftrain" run gpt2-124m "${common[@]}" \
    trainer.max_steps=14 run.output_dir="$work/profiled" >"$work/profiled.log" 2>&1 \
    && cp "$work/profile/ops-rank0.tsv" "$HFTRAIN_BENCH_PROFILE/ops-hftrain.tsv" \
    && echo "profile: $HFTRAIN_BENCH_PROFILE/ops-hftrain.tsv" && head -25 "$work/profile/ops-rank0.tsv"
fi
if [ "${HFTRAIN_BENCH_COMPILE:-0}" = 1 ]; then
  "$py" "$root/bench/peer_eager.py" --shard "$work/train.bin" --micro-batch "$micro" --warmup-steps 20 \
    --steps "$((steps - 20))" --compile
fi
