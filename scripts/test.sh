#!/usr/bin/env bash
# Sets up and builds hftrain (scripts/setup.sh), then runs the whole test suite with ctest.
# Extra arguments go to ctest, e.g. scripts/test.sh -L unit  or  scripts/test.sh -R config.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${HFTRAIN_BUILD_DIR:-$root/build}

"$root/scripts/setup.sh" --no-build --test-tools
# The column limit once python3 is surely there: seconds, before a build of half an hour.
python3 "$root/scripts/check-columns.py" --root "$root"
# Python test oracles (transformers, tokenizers, tensorboard, ...) live in the project's .venv.
if [ ! -x "$root/.venv/bin/python" ]; then python3 -m venv "$root/.venv"; fi
# Offline (a bundle made by setup.sh --bundle): HFTRAIN_WHEELS=<bundle>/wheels installs from there.
if [ -n "${HFTRAIN_WHEELS:-}" ]; then
  "$root/.venv/bin/pip" install -q --no-index --find-links "$HFTRAIN_WHEELS" -r "$root/tests/requirements-oracles.txt"
else
  "$root/.venv/bin/pip" install -q -r "$root/tests/requirements-oracles.txt"
fi
# The test build treats warnings as errors, as CI does.
cmake -S "$root" -B "$build_dir" -DHFTRAIN_WERROR=ON -DHFTRAIN_BUILD_TESTS=ON >/dev/null
cmake --build "$build_dir"
cd "$build_dir"
exec ctest --output-on-failure -j "$(nproc)" "$@"
