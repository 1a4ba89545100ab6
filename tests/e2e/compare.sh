# Shared by the end-to-end scripts that compare runs (dist_test.sh, tp_test.sh, pp_test.sh,
# gpu_test.sh): training losses step by step, final weights, and a `check` wrapper that counts a
# check as one result. Source after harness.sh. The checks themselves are in checks.py (close,
# same-weights), which uses only Python's standard library for them, so they also run on a GPU
# machine that has no numpy or safetensors.

# close A B FROM TO [TOL]: training loss and grad_norm of runs A and B agree within TOL (1e-5)
# relative at every step FROM..TO. Prints the largest difference seen.
close() {
  check_py close "$WORK/$1/metrics.jsonl" "$WORK/$2/metrics.jsonl" "$3" "$4" "${5:-1e-5}"
}

# same_weights A B [TOL]: the final models agree within TOL (1e-5) relative: the L2 norm of the
# difference over all weights over the L2 norm of the weights (checks.py same-weights says why not
# per tensor).
same_weights() {
  check_py same-weights "$WORK/$1/final/model.safetensors" "$WORK/$2/final/model.safetensors" "${3:-1e-5}"
}

check() {  # check WHAT COMMAND...: runs a check, counts it, shows what it printed
  local what=$1
  shift
  if "$@" 2>"$WORK/check.err"; then
    ok
    sed "s/^/$what:/" "$WORK/check.err" | grep -F "relative" || true
  else
    fail "$what: $(tail -c 400 "$WORK/check.err")"
  fi
}
