#!/usr/bin/env bash
# Packing with document masking against padding on a length-skewed chat set, one epoch each:
# bench/packing.sh [--rounds 3] [--conversations 3000] [--seq-len 256] [--threads 2] [--json F].
# Needs the build and .venv that ./scripts/test.sh makes. See bench/packing.py.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
py=${HFTRAIN_PYTHON:-$root/.venv/bin/python}
[ -x "$py" ] || { echo "packing.sh: $py is missing; run ./scripts/test.sh (or scripts/setup.sh and the oracles) first" >&2; exit 2; }
exec "$py" "$root/bench/packing.py" "$@"
