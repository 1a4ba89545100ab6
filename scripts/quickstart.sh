#!/usr/bin/env bash
# Sets up hftrain, trains the quickstart recipe (a small GPT on the fortune-cookie corpus, about five
# minutes on two CPU cores), then prints a few samples from the model and where it is.
# Extra arguments are overrides for the run, e.g. ./scripts/quickstart.sh trainer.max_steps=500
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${HFTRAIN_BUILD_DIR:-$root/build}
"$root/scripts/setup.sh"
hftrain="$build_dir/apps/hftrain/hftrain"
cd "$root"
run_dir=runs/quickstart
"$hftrain" run quickstart --overwrite run.output_dir="$run_dir" "$@"  # a re-run starts over
echo
echo "Samples from the model:"
for prompt in "The " "A man " "Q: "; do
  "$hftrain" generate "$run_dir" --prompt "$prompt" --max-new-tokens 120 --temperature 0.8 --top-k 40 --seed 7 2>/dev/null
  echo "-----"
done
echo "Model: $root/$run_dir/final   (metrics: $run_dir/metrics.jsonl, TensorBoard: tensorboard --logdir $run_dir)"
