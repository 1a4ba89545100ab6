#!/usr/bin/env bash
# The layout check itself: a small tree with a clean include graph passes; an include that runs
# up the stage order, a folder that is no stage, and a long hand-written file are each reported.
set -euo pipefail
check=${1:?usage: check_layout_test.sh <scripts/check-layout.py>}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
expect() {  # expect <what> <exit code> <text in output>
  local what=$1 code=$2 text=$3 out rc=0
  out=$(python3 "$check" --root "$tmp" 2>&1) || rc=$?
  if [ "$rc" != "$code" ] || ! grep -qF -- "$text" <<<"$out"; then
    echo "FAIL: $what (exit $rc, wanted $code and '$text'):"; echo "$out"; fails=$((fails + 1))
  else
    echo "ok: $what"
  fi
}
mkdir -p "$tmp/lib/util" "$tmp/lib/data" "$tmp/lib/train" "$tmp/lib/parallel/comm" "$tmp/apps/hftrain"
echo '#pragma once' >"$tmp/lib/util/error.h"
printf '#include "util/error.h"\n#include <vector>\n' >"$tmp/lib/data/loader.h"
printf '#include "data/loader.h"\n#include "parallel/comm/world.h"\n' >"$tmp/lib/train/trainer.cpp"
printf '#include "util/error.h"\n' >"$tmp/lib/parallel/comm/world.h"
printf '#include "train/trainer.h"\n' >"$tmp/apps/hftrain/main.cpp"
expect "a clean tree passes" 0 "layout check passed"
expect "the graph names each edge with its count" 0 "train                    -> parallel/comm (1), data (1)"

printf '#include "train/trainer.h"\n' >>"$tmp/lib/data/loader.h"
expect "an include up the order fails, naming file and line" 1 'lib/data/loader.h:3: data includes "train/trainer.h" from train, a later stage'
sed -i '3d' "$tmp/lib/data/loader.h"

mkdir -p "$tmp/lib/extras"; echo '#pragma once' >"$tmp/lib/extras/thing.h"
expect "a folder that is no stage fails" 1 "lib/extras/ is not a stage"
rm -r "$tmp/lib/extras"

echo '#pragma once' >"$tmp/lib/parallel/loose.h"
expect "a file loose in a split stage fails" 1 "lib/parallel/ is not a stage"
rm "$tmp/lib/parallel/loose.h"

seq 1 450 | sed 's#^#// line #' >"$tmp/lib/data/long.cpp"
expect "a long hand-written file is listed" 0 "450 lib/data/long.cpp"
mkdir -p "$tmp/lib/data/generated"; mv "$tmp/lib/data/long.cpp" "$tmp/lib/data/generated/long.cpp"
expect "a generated one is not" 0 "no hand-written file over 400 lines"

if [ "$fails" -ne 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo "all layout-check cases passed"
