#!/usr/bin/env bash
# Benchmark: how long `hftrain resume` takes to reach its first new step, from a checkpoint early
# in a run and from one many steps later. The data position is one global sample cursor that the
# sampler seeks to in O(1), so the two should take the same time. Prints one line per checkpoint.
# Usage: bench/resume_time.sh [path/to/hftrain] [late step, default 20000]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
hftrain=$(realpath "${1:-$root/build/apps/hftrain/hftrain}")
late=${2:-20000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export HFTRAIN_RECIPES_DIR="$root/recipes" HFTRAIN_CACHE_DIR="$work/cache"
for i in $(seq 1 400); do printf 'Cookie number %d says: a stitch in time saves nine.\n%%\n' "$i"; done > "$work/cookies"
common=(data.train="$work/cookies" "data.separator='%'" data.validation_fraction=0 model.n_layer=1 model.n_head=2
        model.d_model=32 model.max_seq_len=32 data.seq_len=32 model.vocab_size=260 trainer.micro_batch_size=8
        scheduler.warmup_steps=0 trainer.eval_every=0 trainer.log_every=1000 checkpoint.keep_last=0)
"$hftrain" run quickstart "${common[@]}" trainer.max_steps="$late" checkpoint.every_steps=10 \
  run.output_dir="$work/run" >/dev/null 2>&1
echo "resume to one more step (best of 3), $(nproc) CPUs:"
for step in 10 "$late"; do
  best=
  for _ in 1 2 3; do
    rm -rf "$work/resumed"
    start=$(date +%s.%N)
    "$hftrain" resume "$work/run/checkpoint-$step" trainer.max_steps=$((step + 1)) run.output_dir="$work/resumed" \
      >/dev/null 2>&1
    t=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
    best=$(awk -v t="$t" -v b="${best:-1e9}" 'BEGIN { print (t < b ? t : b) }')
  done
  cursor=$(grep -o '"cursor": *[0-9]*' "$work/run/checkpoint-$step/data.json" | grep -o '[0-9]*$')
  printf '  from checkpoint-%-6s (sample cursor %8s): %.2f s\n' "$step" "$cursor" "$best"
done
