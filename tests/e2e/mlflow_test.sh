#!/usr/bin/env bash
# End-to-end: logging.report_to mlflow against a real `mlflow server` (the mlflow package of
# tests/requirements-oracles.txt) on 127.0.0.1, read back with mlflow's own client:
# - a run's params (the flattened config), run.tags and hftrain's tags, every step's train/loss
#   equal to metrics.jsonl's, the evaluations, the final model's path, status FINISHED;
# - a resume goes on with the same MLflow run; two ranks report once;
# - a run that diverged ends FAILED with the error as a tag;
# - no server for a whole run: exit 0, one warning, the records kept in mlflow-pending.json and
#   sent first when the run is resumed with the server up;
# - bad tracker settings: exit 2.
# Usage: mlflow_test.sh path/to/hftrain   (tests/e2e/harness.sh)
source "$(dirname "${BASH_SOURCE[0]}")/harness.sh" "$@"
unset MLFLOW_TRACKING_URI MLFLOW_EXPERIMENT_NAME

MLFLOW=$(dirname "$PY")/mlflow
[ -x "$MLFLOW" ] || { echo "FAIL: $MLFLOW is missing: pip install -r tests/requirements-oracles.txt"; exit 1; }
PORT=$(free_port)
URI="http://127.0.0.1:$PORT"
server_pid=
start_server() {
  "$MLFLOW" server --host 127.0.0.1 --port "$PORT" --backend-store-uri "sqlite:///$WORK/mlflow.db" \
    --default-artifact-root "$WORK/artifacts" --workers 1 >"$WORK/server.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 1 240); do
    curl -sf "$URI/health" >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  echo "FAIL: mlflow server did not start: $(tail -c 1000 "$WORK/server.log")"
  exit 1
}
trap '[ -n "$server_pid" ] && kill $server_pid 2>/dev/null; pkill -f "port $PORT" 2>/dev/null; chmod -R u+rwx "$WORK"; rm -rf "$WORK"' EXIT

cookie_corpus
common=(data.train="$WORK/corpus/*" "data.separator='%'" data.validation_fraction=0.1 model.arch=gpt2 model.n_layer=2
        model.n_head=2 model.d_model=32 model.vocab_size=261 model.max_seq_len=64 data.seq_len=32
        trainer.micro_batch_size=2 trainer.max_grad_norm=1.0 optimizer.lr=0.003 trainer.log_every=1
        trainer.max_steps=12 checkpoint.every_steps=4 trainer.device=cpu trainer.eval_every=4 scheduler.warmup_steps=2
        "logging.report_to=[jsonl, tensorboard, mlflow]" logging.mlflow.tracking_uri="$URI"
        logging.mlflow.experiment=e2e logging.mlflow.flush_every=1s logging.mlflow.timeout=5s)

# check_run NAME STATUS LAST_STEP: the MLflow run of run directory NAME, read with mlflow's client.
check_run() {
  check_py mlflow-run "$URI" "$WORK/$1" "$2" "$3"
}

# --- no server for a whole run: training is not held up; the records are kept
run 0 run quickstart "${common[@]}" +run.tags.team=nlp run.output_dir="$WORK/offline"
[ "$(grep -c 'did not take the metrics' "$WORK/stderr")" = 1 ] && ok || fail "expected one warning for the server being down"
has "records could not be sent to $URI; kept in $WORK/offline/mlflow-pending.json" err
[ -f offline/mlflow-pending.json ] && ok || fail "no mlflow-pending.json"
[ -f offline/final/model.safetensors ] && ok || fail "the run without a server did not finish"

start_server

# --- a run reported to MLflow
run 0 run quickstart "${common[@]}" +run.tags.team=nlp run.output_dir="$WORK/tracked"
has "mlflow: run " err
first=$(check_run tracked FINISHED 12) && ok || fail "the MLflow run does not hold what the run logged: $first"
# --- resumed: the same MLflow run goes on
run 0 resume "$WORK/tracked" trainer.max_steps=16
has "mlflow: going on with run $first" err
second=$(check_run tracked FINISHED 16 2>&1) && [ "$second" = "$first" ] && ok || fail "resume: $second"

# --- the records of the run without a server are sent when it is resumed
run 0 resume "$WORK/offline" trainer.max_steps=16
has "records an earlier process could not send are sent first" err
out=$(check_run offline FINISHED 16 2>&1) && ok || fail "the kept records did not arrive: $out"
[ ! -f offline/mlflow-pending.json ] && ok || fail "mlflow-pending.json outlived its records"

# --- two ranks: rank 0 reports, each step once
run 0 run quickstart "${common[@]}" +run.tags.team=nlp run.output_dir="$WORK/ddp" --nproc-per-node 2
out=$(check_run ddp FINISHED 12 2>&1) && ok || fail "two ranks: $out"

# --- a run that diverged: FAILED, with the error
HFTRAIN_TEST_FAULT=0:5:nan run 1 run quickstart "${common[@]}" +run.tags.team=nlp trainer.on_nonfinite=stop \
  run.output_dir="$WORK/failed"
check_py mlflow-failed "$URI" "$WORK/failed" && ok || fail "the diverged run's MLflow status"

# --- bad tracker settings
run 2 config quickstart "logging.report_to=[mlflow]"
has "no tracking server is set" err
run 2 config quickstart "logging.report_to=[jsonl, wandb]"
has "hftrain does not write Weights & Biases runs" err
run 2 config quickstart "logging.report_to=[mlflow]" logging.mlflow.tracking_uri=file:///tmp/mlruns
has "not to a file store" err
run 2 config quickstart "logging.report_to=[jsonl, comet]"
has "which is not a tracker" err
finish
