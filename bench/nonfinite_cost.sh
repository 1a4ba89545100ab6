#!/usr/bin/env bash
# Benchmark: what trainer.on_nonfinite costs per step. skip and stop read the step's loss and
# gradient norm from the device every step (to drop a bad update before it is applied); rollback
# without spikes keeps a flag on the device and reads it with the metrics (every log_every steps).
# Trains the same small Llama for 60 steps under rollback, skip, and skip with spikes judged,
# twice each in turn, and prints the mean step time of steps 21-60 of each (two logging windows of
# 20 steps a run; the first left out) and
# the last loss (the same: a good run's updates are the same under every policy).
# Usage: bench/nonfinite_cost.sh [path/to/hftrain] [device: cpu|cuda]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
hftrain=$(realpath "${1:-$root/build/apps/hftrain/hftrain}")
device=${2:-cpu}
py=${HFTRAIN_PYTHON:-$root/.venv/bin/python}
[ -x "$py" ] || py=python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export HFTRAIN_RECIPES_DIR="$root/recipes" HFTRAIN_CACHE_DIR="$work/cache"
for i in $(seq 1 400); do
  printf 'The cat sat on the mat number %d.\n%%\nA stitch in time saves nine, said cookie %d.\n%%\n' "$i" "$i"
done > "$work/cookies"
model=(data.train="$work/cookies" "data.separator='%'" data.validation_fraction=0.05 model.arch=llama model.n_layer=4
       model.n_head=4 model.n_kv_head=4 model.d_model=128 model.d_ff=512 model.vocab_size=260 model.max_seq_len=128
       data.seq_len=128 trainer.micro_batch_size=8 trainer.max_steps=60 trainer.log_every=20 checkpoint.at_end=false
       trainer.eval_every=0 scheduler.warmup_steps=5 trainer.device=$device)
declare -A policy=([rollback]="trainer.on_nonfinite=rollback" [skip]="trainer.on_nonfinite=skip"
                   [skip+spikes]="trainer.on_nonfinite=skip trainer.spike.factor=10")
echo "trainer.on_nonfinite, llama 4 x 128, 8 x 128 tokens a step, fp32, $device, $(nproc) CPUs; ms/step over steps 21-60:"
for round in 1 2; do
  for name in rollback skip skip+spikes; do
    # shellcheck disable=SC2086
    "$hftrain" run quickstart "${model[@]}" ${policy[$name]} \
      run.output_dir="$work/$name-$round" >/dev/null 2>"$work/err" || { tail -5 "$work/err"; exit 1; }
  done
done
for name in rollback skip skip+spikes; do
  "$py" - "$name" "$work/$name-1/metrics.jsonl" "$work/$name-2/metrics.jsonl" <<'PY'
import json, statistics, sys
times, last = [], None
for path in sys.argv[2:]:
    for line in open(path):
        r = json.loads(line)
        if r.get("type") == "train" and r["step"] > 20:
            times.append(r["step_time_ms"])
            last = r["loss"]
print(f"  {sys.argv[1]:12s} {statistics.mean(times):8.2f} ms/step  (windows {', '.join(f'{t:.2f}' for t in times)}; last loss {last:.6f})")
PY
done
