#!/usr/bin/env bash
# hftrain's token-cache build next to the `tokenizers` library's batch encoding, on the same corpus,
# tokenizer.json and thread count: bench/tokenizer.sh [--threads N] [--rounds 3] [--mb 20] [--json F].
# Needs the build and .venv that ./scripts/test.sh makes. See bench/tokenizer.py.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
py=${HFTRAIN_PYTHON:-$root/.venv/bin/python}
[ -x "$py" ] || { echo "tokenizer.sh: $py is missing; run ./scripts/test.sh (or scripts/setup.sh and the oracles) first" >&2; exit 2; }
exec "$py" "$root/bench/tokenizer.py" --python "$py" "$@"
