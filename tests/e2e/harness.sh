# Shared by the end-to-end scripts. A script starts with
#   source "$(dirname "${BASH_SOURCE[0]}")/harness.sh" "$@"
# and ends with `scenarios NAME...` (its scenarios, bash functions, in the order a whole run takes
# them) or, for a script of one piece, with `finish`. Usage of such a script:
#   SCRIPT path/to/hftrain [SCENARIO...]   all scenarios, or only those named (in the script's order)
#   SCRIPT --list                          the scenarios' names, one a line
# HFTRAIN_E2E_SCENARIO="NAME..." (spaces or commas) names the scenarios when no argument does.
#
# The prologue below: HFTRAIN (the binary), SRC (the source tree: HFTRAIN_SOURCE_DIR, else this
# file's), PY (HFTRAIN_PYTHON, else python3), E2E_ARGS (the arguments after the binary), a scratch
# folder WORK that is the working directory and is removed at exit, HFTRAIN_RECIPES_DIR and
# HFTRAIN_CACHE_DIR set, no HFTRAIN__* override from the caller's environment, and mpirun allowed
# as root (CI containers). Then: counting (run / has / is / ok / fail, finish), the Python checks
# (check_py: tests/e2e/checks.py), the corpus (cookie_corpus), MPI (MPIRUN, free_port), state that
# scenarios share (once) and the scenario runner (scenarios).
set -u
E2E_SCRIPT=$(basename "$0")
if [ "${1:-}" = --list ]; then
  # Scripts of one piece have no scenarios: nothing to list (and nothing of theirs may run here).
  grep -q '^scenarios ' "$0" || exit 0
  E2E_LIST=true
  HFTRAIN=
else
  E2E_LIST=false
  [ $# -ge 1 ] || { echo "usage: $E2E_SCRIPT path/to/hftrain [SCENARIO...] | --list" >&2; exit 2; }
  HFTRAIN=$(realpath "$1") || exit 2
fi
E2E_ARGS=("${@:2}")
SRC=${HFTRAIN_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
PY=${HFTRAIN_PYTHON:-python3}
CHECKS=$SRC/tests/e2e/checks.py

WORK=$(mktemp -d)
trap 'chmod -R u+rwx "$WORK"; rm -rf "$WORK"' EXIT
cd "$WORK" || exit 1
unset $(env | grep -o '^HFTRAIN__[^=]*') 2>/dev/null
export HFTRAIN_RECIPES_DIR="$SRC/recipes" HFTRAIN_CACHE_DIR="$WORK/cache"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1  # mpirun as root (CI containers)

# "${MPIRUN[@]}" -np N "$HFTRAIN" ...: mpirun oversubscribed (CI has 2 cores), one intra-op thread a
# rank, and the variables hftrain reads passed to the ranks (add `-x VAR` for more).
MPIRUN=(mpirun --oversubscribe -x OMP_NUM_THREADS=1 -x HFTRAIN_RECIPES_DIR -x HFTRAIN_CACHE_DIR)
# free_port: a TCP port free on 127.0.0.1 now (--master-port of launchers started by hand). Drawn
# below Linux's ephemeral range (32768-60999): a port the kernel hands out (bind to 0) can be given
# again as the local end of another test's outgoing connection (gloo opens many) before the store
# binds it, and the ranks then wait out distributed.startup_timeout for a store that never started.
free_port() {
  "$PY" -c '
import random, socket
for _ in range(200):
    port = random.randrange(20000, 32000)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        continue
    finally:
        s.close()
    print(port)
    break
else:
    raise SystemExit("no free port in 20000-32000")'
}

passed=0
failed=0
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }
ok() { passed=$((passed + 1)); }

# run EXPECTED_CODE ARGS...: runs hftrain, keeps stdout in $out and stderr in $err. Bad input must
# never surface as a crash or as a library's internals.
run() {
  local want=$1
  shift
  "$HFTRAIN" "$@" >"$WORK/stdout" 2>"$WORK/stderr"
  code=$?
  out=$(tr -d '\0' <"$WORK/stdout")  # a random model may print NUL bytes; bash cannot hold them
  err=$(cat "$WORK/stderr")
  if [ "$code" != "$want" ]; then
    fail "hftrain $* exited $code, expected $want; stderr: $(tail -c 600 "$WORK/stderr")"
    return 1
  fi
  if grep -qE 'terminate called|Aborted|Segmentation|what\(\)|YAML::|std::|c10::|Exception raised from' "$WORK/stderr"; then
    fail "hftrain $* leaked internals: $(tail -c 600 "$WORK/stderr")"
    return 1
  fi
  ok
}
has() {  # has TEXT out|err
  local text=$1 where=$2 hay
  if [ "$where" = out ]; then hay=$out; else hay=$err; fi
  if [[ "$hay" == *"$text"* ]]; then ok; else fail "expected '$text' in $where of: ${hay:0:600}"; fi
}
is() {  # is EXPECTED: stdout is exactly EXPECTED
  if [ "$out" = "$1" ]; then ok; else fail "expected stdout '$1', got '${out:0:600}'"; fi
}
# check_py NAME ARGS...: one of the Python checks of tests/e2e/checks.py (`checks.py --help` lists
# them); its exit status says whether it held.
check_py() { "$PY" "$CHECKS" "$@"; }

# cookie_corpus [N]: corpus/cookies, 2N short documents (80 unless N) separated by '%' lines
# (data.separator='%'), the text most e2e scripts train on.
cookie_corpus() {
  mkdir -p "$WORK/corpus"
  for i in $(seq 1 "${1:-80}"); do
    printf 'The cat sat on the mat number %d.\n%%\nA stitch in time saves nine, said cookie %d.\n%%\n' "$i" "$i"
  done > "$WORK/corpus/cookies"
}

# once DIR COMMAND...: state that several scenarios use (a reference run, a checkpoint to resume):
# runs COMMAND unless $WORK/DIR exists, so a scenario run alone makes what it needs and a whole run
# makes it once. A scenario that changes such state works on a copy of it.
once() {
  local dir=$1
  shift
  [ -e "$WORK/$dir" ] || "$@"
}

finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}

# scenarios NAME...: the script's scenarios (functions), in order. Prints them for --list; else runs
# the ones asked for (all by default) in this order, each from $WORK, then finishes.
scenarios() {
  # The locals are prefixed: a scenario's own variables (bash scopes them dynamically) must not
  # overwrite the runner's.
  local _e2e_name _e2e_want=() _e2e_chosen=() _e2e_start _e2e_passed _e2e_failed
  if $E2E_LIST; then
    printf '%s\n' "$@"
    exit 0
  fi
  if [ ${#E2E_ARGS[@]} -gt 0 ]; then
    _e2e_want=("${E2E_ARGS[@]}")
  elif [ -n "${HFTRAIN_E2E_SCENARIO:-}" ]; then
    read -ra _e2e_want <<<"${HFTRAIN_E2E_SCENARIO//,/ }"
  fi
  for _e2e_name in "${_e2e_want[@]}"; do
    if ! printf '%s\n' "$@" | grep -qxF -- "$_e2e_name"; then
      echo "$E2E_SCRIPT: no scenario '$_e2e_name'; the scenarios: $*" >&2
      exit 2
    fi
  done
  for _e2e_name in "$@"; do
    declare -F "$_e2e_name" >/dev/null || { echo "$E2E_SCRIPT: scenario '$_e2e_name' is not a function" >&2; exit 2; }
    if [ ${#_e2e_want[@]} -eq 0 ] || printf '%s\n' "${_e2e_want[@]}" | grep -qxF -- "$_e2e_name"; then _e2e_chosen+=("$_e2e_name"); fi
  done
  for _e2e_name in "${_e2e_chosen[@]}"; do
    echo "=== $E2E_SCRIPT: $_e2e_name"
    cd "$WORK" || exit 1
    _e2e_start=$SECONDS _e2e_passed=$passed _e2e_failed=$failed
    "$_e2e_name"
    echo "--- $_e2e_name: $((passed - _e2e_passed)) passed, $((failed - _e2e_failed)) failed, $((SECONDS - _e2e_start)) s"
  done
  cd "$WORK" || exit 1
  finish
}
