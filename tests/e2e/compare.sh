# Shared by the end-to-end scripts that compare runs (dist_test.sh, gpu_test.sh): training losses
# step by step, final weights, and a `check` wrapper that counts a Python check as one result.
# Source after harness.sh, with PY set. Only the Python standard library is used, so the checks
# also run on a GPU machine that has no numpy or safetensors.

# close A B FROM TO [TOL]: training loss and grad_norm of runs A and B agree within TOL (1e-5)
# relative at every step FROM..TO. Prints the largest difference seen.
close() {
  "$PY" - "$WORK/$1/metrics.jsonl" "$WORK/$2/metrics.jsonl" "$3" "$4" "${5:-1e-5}" <<'PY'
import json, sys
def load(path):
    return {r["step"]: r for r in map(json.loads, open(path)) if "loss" in r and "eval_loss" not in r}
a, b, lo, hi, tol = load(sys.argv[1]), load(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
worst = 0.0
for step in range(lo, hi + 1):
    assert step in a and step in b, f"step {step} missing"
    for key in ("loss", "grad_norm"):
        x, y = a[step][key], b[step][key]
        rel = abs(x - y) / max(abs(x), abs(y), 1e-30)
        worst = max(worst, rel)
        assert rel <= tol, f"step {step} {key}: {x} vs {y}"
print(f"  {sys.argv[1].split('/')[-2]} vs {sys.argv[2].split('/')[-2]}, steps {lo}-{hi}: largest relative difference {worst:.3g}", file=sys.stderr)
PY
}

# same_weights A B [TOL]: the final models agree within TOL (1e-5) relative: the L2 norm of the
# difference over all weights over the L2 norm of the weights. Not per tensor: the attention's key
# bias has a zero gradient in exact arithmetic (softmax ignores a constant per query), so Adam turns
# rounding noise there into different updates, about 1e-5 of that tensor's own size.
same_weights() {
  "$PY" - "$WORK/$1/final/model.safetensors" "$WORK/$2/final/model.safetensors" "${3:-1e-5}" <<'PY'
import array, json, struct, sys
def load(path):  # float32 tensors of a safetensors file, by name
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", f"{name}: {info['dtype']}"
        begin, end = info["data_offsets"]
        out[name] = array.array("f", raw[8 + n + begin:8 + n + end])
    return out
a, b, tol = load(sys.argv[1]), load(sys.argv[2]), float(sys.argv[3])
assert a.keys() == b.keys()
diff = sum((x - y) ** 2 for k in a for x, y in zip(a[k], b[k])) ** 0.5
norm = sum(x * x for k in a for x in a[k]) ** 0.5
print(f"  final weights differ by {diff / norm:.3g} relative", file=sys.stderr)
assert diff <= tol * norm, f"weights differ by {diff / norm:.3g} relative"
PY
}

check() {  # check WHAT COMMAND...: runs a python check, counts it, shows what it printed
  local what=$1
  shift
  if "$@" 2>"$WORK/check.err"; then
    ok
    sed "s/^/$what:/" "$WORK/check.err" | grep -F "relative" || true
  else
    fail "$what: $(tail -c 400 "$WORK/check.err")"
  fi
}
