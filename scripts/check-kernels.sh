#!/usr/bin/env bash
# Compiles every CUDA kernel of lib/kernels for sm_80 and sm_90 with ptxas's resource report and
# fails on a register spill (spill stores or loads above 0 bytes) or a compile error. Needs nvcc
# (the CUDA toolkit); exits 77 (ctest: skipped) without it. ctest runs it as "kernels: compile
# for sm_80 and sm_90 without spills".
# Usage: scripts/check-kernels.sh [nvcc]
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
nvcc=${1:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
[ -x "$nvcc" ] || { echo "check-kernels.sh: no nvcc; skipped"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
checked=0
for cu in "$root"/lib/kernels/*.cu; do
  for arch in 80 90; do
    report=$work/$(basename "$cu" .cu)-sm$arch.txt
    if ! "$nvcc" -std=c++17 -O3 -arch=sm_$arch -Xptxas -v -I"$root/lib" -c "$cu" -o "$work/out.o" >"$report" 2>&1; then
      echo "FAILED: $(basename "$cu") does not compile for sm_$arch:"; cat "$report"; status=1; continue
    fi
    checked=$((checked + 1))
    if grep -E "[1-9][0-9]* bytes spill (stores|loads)" "$report" >/dev/null; then
      echo "FAILED: $(basename "$cu") spills registers on sm_$arch:"; grep -E "Compiling|spill|registers" "$report"
      status=1
    else
      echo "ok: $(basename "$cu") sm_$arch: $(grep -E 'Used [0-9]+ registers' "$report" | head -1 | sed 's/.*: //')"
    fi
  done
done
[ "$checked" -gt 0 ] || { echo "check-kernels.sh: no kernel compiled"; exit 1; }
exit $status
