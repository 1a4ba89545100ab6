#!/usr/bin/env bash
# End-to-end: automatic restarts (--max-restarts N, --restart-backoff, --launch-with), on the CPU.
# HFTRAIN_TEST_FAULT=<rank>:<step>:kill@K kills that rank after that step in attempt K only:
# - one process and two ranks under zero2 (hftrain's launcher), each killed three times with
#   --max-restarts 3: the job finishes, and its losses, learning rates, gradient norms, evaluations
#   and final weights equal an uninterrupted run's bit for bit; each restart and its cause is in the
#   log and in supervisor.log;
# - the same under mpirun (--launch-with), and `hftrain resume DIR --max-restarts`;
# - three kills with --max-restarts 2: it gives up with the last cause and the worker's exit code;
# - no restart for what would fail again: divergence under trainer.on_nonfinite=stop (exit 1),
#   training data changed under the checkpoint (exit 2), a Ctrl-C to the supervisor (the workers
#   save a checkpoint, exit 130);
# - flags that do not go together, and a launcher that is not on PATH: exit 2.
# Usage: restart_test.sh path/to/hftrain [SCENARIO...] | --list   (tests/e2e/harness.sh)
source "$(dirname "${BASH_SOURCE[0]}")/harness.sh" "$@"
# Bit for bit needs one intra-op thread per process (hftrain's launcher gives each of 2 ranks on
# 2 cores one anyway): with two, LibTorch's CPU kernels sometimes sum in another order under load,
# and an uninterrupted stretch of a run then differs in the gradient norm's last bits
# (CONTRIBUTING.md, "What we learned about the dependencies").
export OMP_NUM_THREADS=1

cookie_corpus
common=(data.train="$WORK/corpus/*" "data.separator='%'" data.validation_fraction=0.1 model.arch=gpt2 model.n_layer=2
        model.n_head=2 model.d_model=32 model.vocab_size=261 model.max_seq_len=64 data.seq_len=32
        trainer.micro_batch_size=2 trainer.grad_accum_steps=1 trainer.max_grad_norm=1.0 optimizer.lr=0.003
        trainer.log_every=1 trainer.max_steps=12 checkpoint.every_steps=2 checkpoint.at_end=true trainer.device=cpu
        trainer.eval_every=4 scheduler.warmup_steps=2)
fast=(--restart-backoff 0.2)

# same_run A B: metrics.jsonl of A and B hold the same values (as written: bit for bit) for every
# step and evaluation, each once, and the final weights are the same bytes.
same_run() {
  check_py same-run "$WORK/$1/metrics.jsonl" "$WORK/$2/metrics.jsonl" || return 1
  cmp -s "$WORK/$1/final/model.safetensors" "$WORK/$2/final/model.safetensors"
}
count() { grep -c "$1" "$WORK/stderr"; }  # count TEXT: lines of the last run's stderr holding TEXT

# the uninterrupted runs the restarted ones must equal: one process, and two ranks under zero2
straight() { once straight run 0 run quickstart "${common[@]}" run.output_dir="$WORK/straight"; }
dstraight() {
  once dstraight run 0 run quickstart "${common[@]}" distributed.strategy=zero2 run.output_dir="$WORK/dstraight" \
    --nproc-per-node 2
}

# --- one process, killed after steps 3, 7 and 11 (attempts 0, 1, 2)
one_process() {
  straight
  HFTRAIN_TEST_FAULT=0:3:kill@0,0:7:kill@1,0:11:kill@2 run 0 run quickstart "${common[@]}" run.output_dir="$WORK/single" \
    --max-restarts 3 "${fast[@]}"
  has "supervisor: restart 1 of 3 in 0.2 s from checkpoint-2; cause: the process" err
  has "was killed by signal 9" err
  has "supervisor: restart 2 of 3 in 0.4 s from checkpoint-6" err
  has "supervisor: restart 3 of 3 in 0.8 s from checkpoint-10" err
  has "supervisor: the job finished after 3 restart(s)" err
  has "resumed from $WORK/single/checkpoint-10 at step 10" err
  same_run straight single && ok || fail "one process killed three times: the run differs from the uninterrupted one"
  grep -q "restart 3 of 3" single/supervisor.log && ok || fail "supervisor.log lacks the restarts"
}

# --- two ranks under zero2 (hftrain's launcher): rank 1, rank 0, rank 1 killed
two_ranks() {
  dstraight
  HFTRAIN_TEST_FAULT=1:3:kill@0,0:7:kill@1,1:11:kill@2 run 0 run quickstart "${common[@]}" distributed.strategy=zero2 \
    run.output_dir="$WORK/dist" --nproc-per-node 2 --max-restarts 3 "${fast[@]}"
  has "supervisor: restart 1 of 3 in 0.2 s from checkpoint-2; cause: rank 1 (pid" err
  has "supervisor: restart 2 of 3 in 0.4 s from checkpoint-6; cause: rank 0 (pid" err
  has "supervisor: restart 3 of 3 in 0.8 s from checkpoint-10; cause: rank 1 (pid" err
  same_run dstraight dist && ok || fail "two ranks killed three times: the run differs from the uninterrupted one"
}

# --- under mpirun, restarted as a whole by the outer hftrain
under_mpirun() {
  command -v mpirun >/dev/null || return 0
  dstraight
  HFTRAIN_TEST_FAULT=1:5:kill@0 run 0 run quickstart "${common[@]}" distributed.strategy=zero2 run.output_dir="$WORK/mpi" \
    --max-restarts 1 "${fast[@]}" --launch-with "${MPIRUN[*]} -np 2 -x HFTRAIN_TEST_FAULT"
  has "supervisor: restart 1 of 1 in 0.2 s from checkpoint-4" err
  same_run dstraight mpi && ok || fail "mpirun restarted by hftrain: the run differs from the uninterrupted one"
}

# --- resume DIR --max-restarts: a run stopped at step 4, resumed, killed once more
resume_restarts() {
  straight
  HFTRAIN_TEST_FAULT=0:5:kill run 137 run quickstart "${common[@]}" run.output_dir="$WORK/resumed"
  HFTRAIN_TEST_FAULT=0:9:kill@0 run 0 resume "$WORK/resumed/checkpoint-4" --max-restarts 1 "${fast[@]}"
  has "supervisor: restart 1 of 1 in 0.2 s from checkpoint-8" err
  has "resuming from $WORK/resumed/checkpoint-8 (step 8)" err
  cmp -s straight/final/model.safetensors resumed/final/model.safetensors && ok \
    || fail "resume with restarts: the final weights differ from the uninterrupted run's"
}

# --- --overwrite starts over once: the restart resumes the new run, not step 0
overwrite() {
  straight
  run 0 run quickstart "${common[@]}" trainer.max_steps=6 run.output_dir="$WORK/over"
  HFTRAIN_TEST_FAULT=0:7:kill@0 run 0 run quickstart "${common[@]}" run.output_dir="$WORK/over" --overwrite --max-restarts 1 \
    "${fast[@]}"
  has "supervisor: restart 1 of 1 in 0.2 s from checkpoint-6" err
  has "resuming from $WORK/over/checkpoint-6 (step 6)" err
  same_run straight over && ok || fail "--overwrite with a restart: the run differs from the uninterrupted one"
}

# --- more kills than restarts: it gives up with the last cause and the worker's code
give_up() {
  HFTRAIN_TEST_FAULT=0:3:kill@0,0:7:kill@1,0:11:kill@2 run 137 run quickstart "${common[@]}" run.output_dir="$WORK/gaveup" \
    --max-restarts 2 "${fast[@]}"
  has "supervisor: giving up after 2 restart(s) (--max-restarts 2); the last cause: the process (pid" err
  [ "$(count 'supervisor: restart')" = 2 ] && ok || fail "expected two restarts before giving up"
  [ -d gaveup/checkpoint-10 ] && ok || fail "the checkpoint of the last attempt is missing"
}

# --- divergence under stop: a restart would meet it again
diverged() {
  HFTRAIN_TEST_FAULT=0:5:nan run 1 run quickstart "${common[@]}" trainer.on_nonfinite=stop run.output_dir="$WORK/diverged" \
    --max-restarts 3 "${fast[@]}"
  has "supervisor: not restarting: training diverged (rank 0: step 5" err
  [ "$(count 'supervisor: restart')" = 0 ] && ok || fail "a diverged run was restarted"
  [ -f diverged/failures/rank-0.json ] && ok || fail "no failure record for the diverged run"
}

# --- the data changed under the checkpoint while the supervisor waited: bad input, exit 2 (the
# corpus is put back as it was afterwards)
changed_data() {
  local pid code
  HFTRAIN_TEST_FAULT=0:3:kill@0 "$HFTRAIN" run quickstart "${common[@]}" run.output_dir="$WORK/changed" --max-restarts 2 \
    --restart-backoff 3 >changed.out 2>changed.err &
  pid=$!
  for _ in $(seq 1 300); do grep -q "supervisor: restart 1 of 2" changed.err 2>/dev/null && break; sleep 0.1; done
  printf 'One more cookie.\n%%\n' >> corpus/cookies
  wait $pid
  code=$?
  [ "$code" = 2 ] && ok || fail "data changed before a restart: exit $code, expected 2: $(tail -c 600 changed.err)"
  grep -q "supervisor: not restarting: bad input (rank 0: the training data changed since" changed.err && ok \
    || fail "the refusal does not name the changed data: $(tail -c 600 changed.err)"
  head -c -18 corpus/cookies > corpus/cookies.tmp && mv corpus/cookies.tmp corpus/cookies
}

# --- Ctrl-C to the supervisor: the workers save a checkpoint and stop; no restart
ctrl_c() {
  local pid code
  "$HFTRAIN" run quickstart "${common[@]}" trainer.max_steps=100000 run.output_dir="$WORK/stopped" --max-restarts 3 \
    --nproc-per-node 2 "${fast[@]}" >stopped.out 2>stopped.err &
  pid=$!
  for _ in $(seq 1 600); do [ -d stopped/checkpoint-4 ] && break; sleep 0.1; done
  kill -INT $pid
  wait $pid
  code=$?
  [ "$code" = 130 ] && ok || fail "Ctrl-C under the supervisor: exit $code, expected 130: $(tail -c 600 stopped.err)"
  grep -q "supervisor: not restarting: the job was asked to stop" stopped.err && ok || fail "no word on the stop request"
  sleep 0.5
  pgrep -f "output_dir=$WORK/stopped" >/dev/null && fail "workers outlived the supervisor" || ok
}

# --- the supervisor belongs outside an mpirun job, not in each of its ranks
inside_mpirun() {
  local code=0
  command -v mpirun >/dev/null || return 0
  timeout 120 "${MPIRUN[@]}" -np 2 "$HFTRAIN" run quickstart "${common[@]}" run.output_dir="$WORK/inner" --max-restarts 1 \
    >inner.out 2>inner.err || code=$?
  [ "$code" != 0 ] && [ "$code" != 124 ] && ok || fail "--max-restarts inside mpirun: exit $code"
  grep -q "run the supervisor outside the job step" inner.err && ok || fail "no word on where the supervisor belongs: $(tail -c 400 inner.err)"
}

# --- flags that do not go together, a launcher not on PATH
bad_flags() {
  run 2 run quickstart "${common[@]}" run.output_dir="$WORK/bad" --max-restarts 1 --nproc-per-node 2 --launch-with srun
  has "--launch-with and --nproc-per-node both start the workers" err
  run 2 run quickstart "${common[@]}" run.output_dir="$WORK/bad" --max-restarts 1 --nproc-per-node 2 --nnodes 2 \
    --master-addr 127.0.0.1 --master-port 29999
  has "each node's launcher would restart its own workers" err
  run 2 run quickstart "${common[@]}" run.output_dir="$WORK/bad" --launch-with "no-such-launcher -n 2"
  has "--launch-with: \`no-such-launcher\` is not on PATH" err
  run 2 run quickstart "${common[@]}" run.output_dir="$WORK/bad" --max-restarts -1
}

scenarios one_process two_ranks under_mpirun resume_restarts overwrite give_up diverged changed_data ctrl_c inside_mpirun \
  bad_flags
