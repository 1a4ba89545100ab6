#!/usr/bin/env bash
# Benchmark: pipeline parallelism's schedules on the CPU, 2 stages x 8 micro-batches of a Llama with
# 8 blocks (d_model 256, 8 x 256 tokens a micro-batch). gpipe holds every micro-batch's activations
# until the backwards; 1f1b at most 2 on the first stage. Prints, for each schedule, the first
# stage's peak memory (the run's own report, rank 0), its step time and last loss (the same
# gradients, so the same losses), beside `hftrain plan`'s estimate of the stage's activations.
# Usage: bench/pipeline_memory.sh [path/to/hftrain]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
hftrain=$(realpath "${1:-$root/build/apps/hftrain/hftrain}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export HFTRAIN_RECIPES_DIR="$root/recipes" HFTRAIN_CACHE_DIR="$work/cache"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for i in $(seq 1 80); do
  printf 'The cat sat on the mat number %d.\n%%\nA stitch in time saves nine, said cookie %d.\n%%\n' "$i" "$i"
done > "$work/cookies"
model=(data.train="$work/cookies" "data.separator='%'" data.validation_fraction=0.1 model.arch=llama model.n_layer=8
       model.n_head=8 model.n_kv_head=8 model.d_model=256 model.d_ff=1024 model.vocab_size=260 model.max_seq_len=256
       data.seq_len=256 trainer.micro_batch_size=8 trainer.grad_accum_steps=8 trainer.max_steps=3
       scheduler.warmup_steps=1 trainer.log_every=1 checkpoint.at_end=false trainer.device=cpu
       distributed.pipeline_parallel=2)
echo "pipeline parallel 2, 8 micro-batches of 8 x 256 tokens, llama 8 x 256, fp32, $(nproc) CPUs:"
for schedule in gpipe 1f1b; do
  "$hftrain" run quickstart "${model[@]}" distributed.pipeline_schedule=$schedule run.output_dir="$work/$schedule" \
    --nproc-per-node 2 >/dev/null 2>"$work/$schedule.err"
  line=$(grep "step 3/3" "$work/$schedule.err")
  planned=$("$hftrain" plan quickstart "${model[@]}" distributed.pipeline_schedule=$schedule --nproc 2 | grep "stage 0:")
  echo "  $schedule: stage 0 peak $(grep -o 'mem [0-9]* MiB' <<<"$line" | cut -d' ' -f2) MiB," \
       "$(grep -o '[0-9.]* ms/step' <<<"$line"), loss $(grep -o 'loss [0-9.]*' <<<"$line" | head -1 | cut -d' ' -f2);" \
       "plan: ${planned#*, Ψ = [0-9]*, }"
done
