#!/usr/bin/env bash
# End-to-end: `hftrain sweep` and `hftrain runs`, on the CPU.
# - a 2x2 grid (model.n_head=2,3 x model.d_model=32,48) in which one point is bad input
#   (d_model 32 is not divisible by 3), stopped with Ctrl-C while its second point trains, then
#   `hftrain sweep --resume`: the finished point is kept, the interrupted one resumes from its
#   checkpoint, the bad one fails, the last finishes: three finished, one failed, as the table and
#   sweep.jsonl say; `hftrain runs` lists its points; a second sweep of that name is refused;
# - a random search (loguniform, --trials 2, two at a time);
# - `hftrain runs` on a folder with finished, failed, interrupted and running runs, as a table and
#   as JSON; `hftrain runs diff` names the keys that differ with their origins;
# - bad sweep arguments: exit 2 before any point runs.
# Usage: sweep_test.sh path/to/hftrain [SCENARIO...] | --list   (tests/e2e/harness.sh)
source "$(dirname "${BASH_SOURCE[0]}")/harness.sh" "$@"

cookie_corpus
common=(data.train="$WORK/corpus/*" "data.separator='%'" data.validation_fraction=0.1 model.arch=gpt2 model.n_layer=2
        model.vocab_size=261 model.max_seq_len=64 data.seq_len=32 trainer.micro_batch_size=2 optimizer.lr=0.003
        trainer.log_every=1 checkpoint.every_steps=2 trainer.device=cpu trainer.eval_every=4 scheduler.warmup_steps=2)

# statuses FILE: "point=status" for every line of a sweep.jsonl
statuses() { check_py sweep-statuses "$1"; }

# --- the grid, stopped while its second point trains (a pause at step 3 holds it there)
grid() {
  local pid code sweep s
  HFTRAIN_TEST_FAULT=0:3:pause "$HFTRAIN" sweep quickstart "${common[@]}" trainer.max_steps=8 run.output_dir="$WORK/grid" \
    model.n_head=2,3 model.d_model=32,48 --name g >grid.out 2>grid.err &
  pid=$!
  for _ in $(seq 1 1800); do [ -d "grid/sweep-g/n_head=2,d_model=48/checkpoint-2" ] && break; sleep 0.1; done
  kill -INT $pid
  wait $pid
  code=$?
  [ "$code" = 130 ] && ok || fail "Ctrl-C to the sweep: exit $code, expected 130: $(tail -c 800 grid.err)"
  sweep=$WORK/grid/sweep-g
  s=$(statuses "$sweep/sweep.jsonl")
  [ "$s" = "n_head=2,d_model=32=finished n_head=2,d_model=48=interrupted n_head=3,d_model=32=pending n_head=3,d_model=48=pending" ] \
    && ok || fail "after Ctrl-C: $s"
  grep -q "continue with: hftrain sweep --resume $sweep" grid.out && ok || fail "no word on how to continue: $(cat grid.out)"
  [ -d "$sweep/n_head=2,d_model=48/checkpoint-2" ] && ok || fail "the interrupted point has no checkpoint"

  run 1 sweep --resume "$sweep"
  has "sweep: 1 of 4 points already finished" err
  s=$(statuses "$sweep/sweep.jsonl")
  [ "$s" = "n_head=2,d_model=32=finished n_head=2,d_model=48=finished n_head=3,d_model=32=failed n_head=3,d_model=48=finished" ] \
    && ok || fail "after --resume: $s"
  has "3 finished, 1 failed, 0 not finished" out
  has "\`model.d_model\` (32) is not div" out   # the failed point's cause, in the table (cut at 80 characters)
  has "best: n_head=" out
  grep -q "resumed from $sweep/n_head=2,d_model=48/checkpoint-" "$sweep/logs/n_head=2,d_model=48.log" && ok \
    || fail "the interrupted point did not resume from its checkpoint"
  [ "$(grep -c 'trained to step 8' "$sweep/logs/n_head=2,d_model=32.log")" = 1 ] && ok || fail "the finished point ran again"
  check_py sweep-figures "$sweep/sweep.jsonl" && ok || fail "sweep.jsonl's figures"

  # `hftrain runs` lists the sweep's points; a second sweep of the same name is refused
  run 0 runs "$WORK/grid"
  has "sweep-g/n_head=2,d_model=48" out
  run 2 sweep quickstart "${common[@]}" trainer.max_steps=4 run.output_dir="$WORK/grid" model.n_head=2,3 --name g
  has "already exists" err
}

# --- a random search, two points at a time
random_search() {
  run 0 sweep quickstart "${common[@]}" trainer.max_steps=4 run.output_dir="$WORK/random" "optimizer.lr=loguniform(1e-4,1e-2)" \
    --trials 2 --seed 3 --parallel 2 --name r model.n_head=2 model.d_model=32
  has "2 finished, 0 failed" out
  [ "$(ls -d random/sweep-r/lr=* | wc -l)" = 2 ] && ok || fail "expected two lr=... run directories: $(ls random/sweep-r)"
}

# --- hftrain runs: finished, failed, interrupted, running; runs diff: the keys that differ, each
# value with its origin
runs_table() {
  local pid busy
  mkdir table
  run 0 run quickstart "${common[@]}" model.n_head=2 model.d_model=32 trainer.max_steps=4 run.output_dir="$WORK/table/done"
  HFTRAIN_TEST_FAULT=0:3:nan run 1 run quickstart "${common[@]}" model.n_head=2 model.d_model=32 trainer.max_steps=6 \
    trainer.on_nonfinite=stop run.output_dir="$WORK/table/diverged"
  HFTRAIN_TEST_FAULT=0:3:pause "$HFTRAIN" run quickstart "${common[@]}" model.n_head=2 model.d_model=32 trainer.max_steps=6 \
    run.output_dir="$WORK/table/stopped" >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 1 300); do [ -d table/stopped/checkpoint-2 ] && break; sleep 0.1; done
  kill -INT $pid
  wait $pid
  HFTRAIN_TEST_FAULT=0:2:pause "$HFTRAIN" run quickstart "${common[@]}" model.n_head=2 model.d_model=32 trainer.max_steps=4 \
    optimizer.lr=0.001 run.output_dir="$WORK/table/busy" >/dev/null 2>&1 &
  busy=$!
  for _ in $(seq 1 300); do [ -f table/busy/status.json ] && break; sleep 0.1; done
  run 0 runs "$WORK/table"
  line() { grep -E "^$1 " <<<"$out"; }
  [[ "$(line done)" =~ ^done\ +finished\ +4/4\ +[0-9.]+\ +checkpoint-4\ +20[0-9-]+\ [0-9:]+\ +[0-9]+\ s ]] && ok || fail "runs: done: $(line done)"
  [[ "$(line diverged)" =~ failed\ +3/6.*checkpoint-3.*step\ 3 ]] && ok || fail "runs: diverged: $(line diverged)"
  [[ "$(line stopped)" =~ interrupted\ +[2-4]/6 ]] && ok || fail "runs: stopped: $(line stopped)"
  [[ "$(line busy)" =~ running ]] && ok || fail "runs: busy: $(line busy)"
  has "RUN" out
  run 0 runs "$WORK/table" --json
  check_py runs-json "$WORK/stdout" && ok || fail "runs --json"
  wait $busy
  run 0 runs diff "$WORK/table/done" "$WORK/table/busy"
  has "optimizer.lr" out
  [[ "$(grep '^optimizer.lr ' <<<"$out")" =~ 0\.003\ +command\ line\ \`optimizer\.lr=0\.003\`\ +0\.001\ +command\ line\ \`optimizer\.lr=0\.001\` ]] \
    && ok || fail "runs diff: $(grep '^optimizer.lr' <<<"$out")"
  has "run.output_dir" out
  run 0 runs diff "$WORK/table/done" "$WORK/table/done/checkpoint-4"
  has "agree on all" out
  run 2 runs diff "$WORK/table/done" "$WORK/nothing"
  has "holds no config.yaml" err
  run 2 runs "$WORK/nothing"
}

# --- bad sweep arguments: nothing runs
bad_args() {
  run 2 sweep quickstart "${common[@]}" "optimizer.lr=loguniform(1e-5,1e-2)" run.output_dir="$WORK/bad"
  has "needs --trials" err
  run 2 sweep quickstart "${common[@]}" trainer.max_steps=-3 model.n_head=2,4 run.output_dir="$WORK/bad"
  has "trainer.max_steps" err
  [ ! -e bad ] && ok || fail "a refused sweep left files"
  run 2 sweep --resume "$WORK/corpus"
}

scenarios grid random_search runs_table bad_args
