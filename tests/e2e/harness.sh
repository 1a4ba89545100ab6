# Shared by the end-to-end scripts: a scratch folder, pass/fail counting, and `run` / `has` / `is`
# checks on the real binary. Source it after setting HFTRAIN; end the script with `finish`.
WORK=$(mktemp -d)
trap 'chmod -R u+rwx "$WORK"; rm -rf "$WORK"' EXIT
cd "$WORK" || exit 1
unset $(env | grep -o '^HFTRAIN__[^=]*') 2>/dev/null

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
# cookie_corpus: corpus/cookies, 160 short documents separated by '%' lines (data.separator='%'),
# the text most e2e scripts train on.
cookie_corpus() {
  mkdir -p "$WORK/corpus"
  for i in $(seq 1 80); do
    printf 'The cat sat on the mat number %d.\n%%\nA stitch in time saves nine, said cookie %d.\n%%\n' "$i" "$i"
  done > "$WORK/corpus/cookies"
}
finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}
