#!/usr/bin/env bash
# Everything that needs a CUDA device, for a GPU machine lent for a short while (no network):
#   build   the whole tree into build/ (configured by scripts/setup.sh --from-bundle BUNDLE against the
#           machine's own PyTorch); every compile error in one go (ninja -k 0)
#   unit    the unit tests with the GPU visible: the [gpu] cases run instead of skipping, and the
#           trainer's tests (trainer.device=auto) train on CUDA
#   e2e     tests/e2e/gpu_test.sh, and e2e: distributed (its NCCL half needs 2 GPUs)
#   bench   bench/gpu_throughput.sh: hftrain against plain PyTorch on GPT-2 124M, and the kernel
#           table of three profiled steps (OUT/ops-hftrain.tsv)
# Each phase writes its log into OUT and a one-line verdict into OUT/summary.txt; later phases
# still run when one fails. Split the phases over several calls where a call has a time limit, and
# name BUNDLE in every call: the device tool replaces a carried folder on each call, which takes
# the unpacked prefix (B/prefix) with it, so every call unpacks it again first (a few seconds)
# before anything runs that loads yaml-cpp, spdlog or fmt from it.
# Usage: scripts/gpu-check.sh OUT [BUNDLE] [PHASE...]   (phases default: build unit e2e bench)
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=$(mkdir -p "${1:?usage: gpu-check.sh OUT [BUNDLE] [PHASE...]}" && cd "$1" && pwd)
bundle=${2:-}
shift $(( $# >= 2 ? 2 : $# ))
phases=("$@")
[ ${#phases[@]} -gt 0 ] || phases=(build unit e2e bench)
build=${HFTRAIN_BUILD_DIR:-$root/build}
hftrain=$build/apps/hftrain/hftrain
jobs=$(nproc)
verdict() {  # verdict PHASE CODE SECONDS
  printf '%-6s %s (%ss)\n' "$1" "$([ "$2" = 0 ] && echo passed || echo "FAILED, exit $2; see $1.log")" "$3" \
    | tee -a "$out/summary.txt"
}
nvidia-smi >"$out/device.txt" 2>&1 || echo "nvidia-smi failed: is there a GPU?" >>"$out/device.txt"
if [ -n "$bundle" ]; then
  HFTRAIN_BUILD_DIR=$build "$root/scripts/setup.sh" --from-bundle "$bundle" --no-build >"$out/setup.log" 2>&1 \
    || { echo "gpu-check.sh: setting up from $bundle failed; see setup.log" | tee -a "$out/summary.txt"; exit 1; }
fi
for phase in "${phases[@]}"; do
  start=$SECONDS
  case $phase in
    build)
      [ -f "$build/build.ninja" ] || { echo "gpu-check.sh: $build is not configured: name BUNDLE" >&2; exit 2; }
      ninja -C "$build" -k 0 -j "$jobs" >"$out/build.log" 2>&1
      code=$?
      "$hftrain" --version >>"$out/build.log" 2>&1
      ;;
    unit)
      (cd "$build" && ctest -L unit -j "$jobs" --timeout 900 --output-on-failure) >"$out/unit.log" 2>&1
      code=$?
      # The [gpu] cases by name, so the log shows that they ran rather than skipped.
      for t in data/test_data model/test_model optim/test_optim train/test_train parallel/test_parallel; do
        "$build/tests/$t" "[gpu]" 2>&1 | grep -E "skipped|passed|failed|FAILED" | tail -3
      done >"$out/unit-gpu-cases.log"
      ;;
    e2e)
      (cd "$build" && ctest -R "e2e: (gpu|distributed)" --output-on-failure -V) >"$out/e2e.log" 2>&1
      code=$?
      ;;
    bench)
      HFTRAIN_BENCH_PROFILE=$out "$root/bench/gpu_throughput.sh" "$hftrain" >"$out/bench.log" 2>&1
      code=$?
      ;;
    *) echo "gpu-check.sh: unknown phase '$phase' (build, unit, e2e, bench)" >&2; exit 2 ;;
  esac
  verdict "$phase" "$code" $((SECONDS - start))
done
