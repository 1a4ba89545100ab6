#!/usr/bin/env bash
# hftrain next to a plain PyTorch eager loop and the Hugging Face Trainer on the same model, data,
# batch and optimizer: bench/peers.sh [cpu|gpu] [SHAPE ...] [--rounds 3] [--threads N] [--json F].
# Needs the build and .venv that ./scripts/test.sh makes (torch and transformers). See bench/peers.py.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
py=${HFTRAIN_PYTHON:-$root/.venv/bin/python}
[ -x "$py" ] || { echo "peers.sh: $py is missing; run ./scripts/test.sh (or scripts/setup.sh and the oracles) first" >&2; exit 2; }
exec "$py" "$root/bench/peers.py" --python "$py" "$@"
