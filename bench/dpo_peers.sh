#!/usr/bin/env bash
# A DPO step of hftrain next to TRL's DPOTrainer on the CPU: bench/dpo_peers.sh [--steps N] [--pairs N]
# [--threads N] [--layers N] [--width N]. Needs the build and .venv that ./scripts/test.sh makes (trl is
# among the test oracles). See bench/dpo_peers.py.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
py=${HFTRAIN_PYTHON:-$root/.venv/bin/python}
[ -x "$py" ] || { echo "dpo_peers.sh: $py is missing; run ./scripts/test.sh first" >&2; exit 2; }
exec "$py" "$root/bench/dpo_peers.py" --python "$py" "$@"
