#!/usr/bin/env bash
# Start-up to the first step on a mixture whose main source is a 100 GiB folder of token shards:
# bench/shards_startup.sh [--gib 100] [--shards 100] [--rounds 3]. Needs the build. See
# bench/shards_startup.py.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
exec python3 "$root/bench/shards_startup.py" "$@"
