#!/usr/bin/env bash
# End-to-end: checkpoints and resume through the real binary. Exact resume (losses at every step
# and final weights byte-identical to an uninterrupted run, with accumulation, clipping, dropout,
# warmup and evaluation), SIGKILL at random moments and in the middle of a save, torn and
# tampered checkpoints, rotation by step number, every override class on resume, a run directory
# that already has checkpoints, one owner per run directory, `verify`, and full / read-only output
# directories.
# Usage: resume_test.sh path/to/hftrain [SCENARIO...] | --list   (tests/e2e/harness.sh)
source "$(dirname "${BASH_SOURCE[0]}")/harness.sh" "$@"

cookie_corpus
# Everything that could break exactness is on: accumulation, clipping, dropout, warmup, evaluation.
common=(data.train="$WORK/corpus/*" "data.separator='%'" data.validation_fraction=0.1 model.n_layer=2 model.n_head=2
        model.d_model=32 model.max_seq_len=64 data.seq_len=32 model.vocab_size=260 model.dropout=0.1
        trainer.micro_batch_size=4 trainer.grad_accum_steps=2 trainer.max_grad_norm=0.5 optimizer.lr=0.003
        scheduler.name=cosine scheduler.warmup_steps=3 trainer.log_every=1 trainer.eval_every=4 trainer.eval_batches=2
        checkpoint.keep_last=0)
shard=optimizer/shard-00000-of-00001.safetensors  # one process: one optimizer shard

# same_history A B FROM TO: metrics.jsonl of runs A and B hold identical loss, lr, grad_norm and
# eval_loss values (as written, so bit-for-bit) for every step FROM..TO, each step exactly once.
same_history() {
  check_py same-history "$WORK/$1/metrics.jsonl" "$WORK/$2/metrics.jsonl" "$3" "$4"
}

# The runs several scenarios start from (each scenario that changes one works on a copy):
# straight: 12 steps uninterrupted, checkpoints at 6 and 12;
straight() {
  once straight run 0 run quickstart "${common[@]}" trainer.max_steps=12 checkpoint.every_steps=6 \
    run.output_dir="$WORK/straight"
}
# half: straight's checkpoint-6 resumed to 12 in a directory of its own.
half() {
  straight
  [ -e half ] && return 0
  mkdir half && cp -r straight/checkpoint-6 half/
  run 0 resume half
}

# --- exact: 12 steps straight vs 6 steps, then a resume for 6 more in another directory
exact() {
  straight
  for f in manifest.json model.safetensors model.json tokenizer.json optimizer/index.json $shard scheduler.json \
           scaler.json rng.safetensors data.json trainer_state.json config.yaml environment.json; do
    [ -s "straight/checkpoint-6/$f" ] && ok || fail "checkpoint-6/$f missing"
  done
  [ "$(cat straight/latest)" = "checkpoint-12" ] && ok || fail "latest is '$(cat straight/latest)', expected checkpoint-12"
  half
  has "resuming from half/checkpoint-6 (step 6)" err
  has "no data replayed" err
  same_history straight half 7 12 && ok || fail "resumed losses differ from the uninterrupted run"
  cmp -s straight/final/model.safetensors half/final/model.safetensors && ok || fail "final weights differ after resume"
  cmp -s straight/checkpoint-12/$shard half/checkpoint-12/$shard && ok || fail "optimizer state differs after resume"
  cmp -s straight/checkpoint-12/optimizer/index.json half/checkpoint-12/optimizer/index.json && ok \
    || fail "optimizer index differs after resume"
  run 0 generate half/checkpoint-12 --prompt "The cat" --max-new-tokens 5 --seed 1
  has "The cat" out
}

# --- exact with a weighted mixture (per-source token counts carried on) and document masking
mixture() {
  for i in $(seq 1 50); do
    printf '{"messages": [{"role": "user", "content": "question %d"}, {"role": "assistant", "content": "answer %d is here"}]}\n' "$i" "$i"
  done > mixchat.jsonl
  local mix=("data.train=[{path: $WORK/corpus/cookies, weight: 0.4, format: text}, {path: $WORK/mixchat.jsonl, weight: 0.6, format: chat}]")
  run 0 run quickstart "${common[@]}" "${mix[@]}" trainer.max_steps=8 checkpoint.every_steps=4 run.output_dir="$WORK/mixstraight"
  mkdir mixhalf && cp -r mixstraight/checkpoint-4 mixhalf/
  run 0 resume mixhalf
  same_history mixstraight mixhalf 5 8 && ok || fail "a resumed mixture run differs from the uninterrupted one"
  cmp -s mixstraight/final/model.safetensors mixhalf/final/model.safetensors && ok || fail "mixture: final weights differ"
  check_py mixture-counts "$WORK/mixstraight/metrics.jsonl" "$WORK/mixhalf/metrics.jsonl" && ok \
    || fail "mixture: per-source counts differ after resume"
}

# --- verify: a good checkpoint, a tampered one (in a copy of straight), a torn one (in a copy of half)
verify() {
  straight
  half
  run 0 verify straight
  has "checkpoint-12: OK" out
  cp -r straight tampered
  printf '\x01' | dd of=tampered/checkpoint-12/$shard bs=1 seek=300 conv=notrunc status=none
  run 2 verify tampered/checkpoint-12
  has "$shard" out
  has "checksum" out
  # Resume from the run directory falls back past the tampered checkpoint, saying which and why,
  # and the continued run still matches the uninterrupted one.
  cp -r tampered fallback
  run 0 resume fallback
  has "skipped fallback/checkpoint-12" err
  has "resuming from fallback/checkpoint-6" err
  same_history straight fallback 7 12 && ok || fail "fallback resume diverged"
  # Naming the tampered checkpoint itself is an error, with the way out.
  run 2 resume tampered/checkpoint-12
  has "does not verify" err
  has "$shard" err
  # A torn checkpoint (its manifest never written) is skipped too.
  cp -r half torn
  rm torn/checkpoint-12/manifest.json
  run 2 verify torn/checkpoint-12
  has "manifest.json" out
}

# --- the override classes on resume (from a copy of half without its checkpoint-12: 6 of 12 steps done)
overrides() {
  half
  cp -r half over
  rm -rf over/checkpoint-12
  run 0 resume over trainer.log_every=2 trainer.max_steps=14
  has "trainer.log_every" err
  [ -d over/checkpoint-14 ] && ok || fail "extending max_steps did not train to 14"
  run 0 resume over/checkpoint-6 optimizer.lr=0.001 run.output_dir="$WORK/lr"
  has "changes the training" err
  run 2 resume over/checkpoint-6 data.seq_len=16
  has "changes the data order" err
  has "--force" err
  run 0 resume over/checkpoint-6 data.seq_len=16 --force run.output_dir="$WORK/forced"
  has "--force" err
  run 0 resume over/checkpoint-6 distributed.strategy=zero1 run.output_dir="$WORK/strategy"
  has "distributed.strategy" err
  run 2 resume over/checkpoint-6 model.n_layer=3
  has "model.n_layer" err
  has "cannot change on resume" err
  run 2 resume over/checkpoint-14
  has "raise trainer.max_steps" err
  run 2 resume "$WORK/nowhere"
  has "nowhere" err
}

# --- a fine-tuning run resumes even when its base model (model.from) is gone
finetune() {
  straight
  cp -r straight/checkpoint-6 base
  run 0 run quickstart "${common[@]}" trainer.max_steps=4 checkpoint.every_steps=2 model.from="$WORK/base" \
    run.output_dir="$WORK/ft"
  rm -rf base
  run 0 resume ft/checkpoint-2
}

# --- `run` never overwrites checkpoints silently (in a copy of straight)
no_overwrite() {
  straight
  cp -r straight existing
  run 2 run quickstart "${common[@]}" trainer.max_steps=12 run.output_dir="$WORK/existing"
  has "already holds checkpoints" err
  has "--overwrite" err
  run 0 run quickstart "${common[@]}" trainer.max_steps=16 run.output_dir="$WORK/existing" --resume
  has "resuming from" err
  [ -d existing/checkpoint-16 ] && ok || fail "run --resume did not continue to 16"
  run 0 run quickstart "${common[@]}" trainer.max_steps=4 checkpoint.every_steps=2 run.output_dir="$WORK/existing" --overwrite
  [ ! -d existing/checkpoint-16 ] && [ -d existing/checkpoint-4 ] && ok || fail "--overwrite did not start over: $(ls existing)"
}

# alone: 8 steps, checkpoint at 4, uninterrupted (the history owner and vanish compare with)
alone() {
  once alone run 0 run quickstart "${common[@]}" trainer.max_steps=8 checkpoint.every_steps=4 run.output_dir="$WORK/alone"
}

# --- one owner per run directory: while a run trains (paused 8 s after step 4 by a test hook), a
# second run into its directory, one with --overwrite --force, and a resume are refused with
# exit 2 naming the owner's pid, before anything there changes; the owner then finishes with the
# history it has alone. Once it is done, the directory resumes as usual.
owner() {
  local owner before after
  alone
  HFTRAIN_TEST_FAULT=0:4:pause "$HFTRAIN" run quickstart "${common[@]}" trainer.max_steps=8 checkpoint.every_steps=2 \
    run.output_dir="$WORK/owned" >owned.out 2>owned.err &
  owner=$!
  # step 3's record is out by the time step 4 ends (records reach the file a step late)
  for _ in $(seq 1 200); do grep -qE '"step": ?3[,}]' owned/metrics.jsonl 2>/dev/null && break; sleep 0.05; done
  sleep 0.5
  before=$(cd owned && find . -type f ! -name train.log -exec md5sum {} + | sort)
  run 2 run quickstart "${common[@]}" trainer.max_steps=8 run.output_dir="$WORK/owned"
  has "is in use by another hftrain process" err
  has "pid $owner" err
  run 2 run quickstart "${common[@]}" trainer.max_steps=8 run.output_dir="$WORK/owned" --overwrite --force
  has "pid $owner" err
  run 2 resume owned
  has "pid $owner" err
  after=$(cd owned && find . -type f ! -name train.log -exec md5sum {} + | sort)
  [ "$before" = "$after" ] && ok || fail "a refused run changed the owner's files: $(diff <(echo "$before") <(echo "$after"))"
  wait $owner && ok || fail "the owner exited $?: $(tail -c 400 owned.err)"
  same_history alone owned 1 8 && ok || fail "the owner's history differs from the same run alone"
  run 0 resume owned trainer.max_steps=10
}

# --- a run directory deleted while the run trains (during the paused step 4): the run stops after
# that step with exit 1, saying so, and a checkpoint of step 4 in a new directory at the path; a
# resume from it ends as the run alone did
vanish() {
  local victim code
  alone
  HFTRAIN_TEST_FAULT=0:4:pause "$HFTRAIN" run quickstart "${common[@]}" trainer.max_steps=8 checkpoint.every_steps=2 \
    run.output_dir="$WORK/vanish" >vanish.out 2>vanish.err &
  victim=$!
  for _ in $(seq 1 200); do grep -qE '"step": ?3[,}]' vanish/metrics.jsonl 2>/dev/null && break; sleep 0.05; done
  sleep 0.5
  rm -rf vanish
  wait $victim
  code=$?
  [ $code = 1 ] && ok || fail "a run whose directory vanished exited $code, expected 1: $(tail -c 400 vanish.err)"
  grep -q "was deleted or moved while training (noticed after step 4)" vanish.err && ok \
    || fail "no message for the vanished run directory: $(tail -c 400 vanish.err)"
  grep -qE 'std::|terminate|what\(\)' vanish.err && fail "the vanished run directory leaked internals" || ok
  [ -d vanish/checkpoint-4 ] && ok || fail "no checkpoint-4 in the recreated run directory: $(ls vanish 2>&1)"
  run 0 resume vanish
  same_history alone vanish 5 8 && ok || fail "the resume after the vanished directory differs from the run alone"
}

# --- rotation keeps the newest by step number (10 and 12, not 8), never the best
rotation() {
  local best
  run 0 run quickstart "${common[@]}" trainer.max_steps=12 checkpoint.every_steps=2 checkpoint.keep_last=2 \
    run.output_dir="$WORK/rot"
  [ "$(ls -d rot/checkpoint-* | sort | xargs -n1 basename | tr '\n' ' ')" = "checkpoint-10 checkpoint-12 " ] && ok \
    || fail "keep_last=2 kept: $(ls rot)"
  run 0 run quickstart "${common[@]}" trainer.max_steps=12 checkpoint.every_steps=2 checkpoint.keep_last=1 \
    checkpoint.keep_best=true trainer.eval_every=2 run.output_dir="$WORK/best"
  best=$(check_py best-eval-step "$WORK/best/metrics.jsonl")
  [ -d "best/checkpoint-$best" ] && [ -d best/checkpoint-12 ] && ok || fail "keep_best lost checkpoint-$best: $(ls best)"
}

# --- SIGKILL in the middle of a save (a test hook stops the writer after 3 files), then resume;
# the history equals straight's (the uninterrupted 12 steps)
crash_in_save() {
  local code
  straight
  HFTRAIN_TEST_CRASH_IN_SAVE=8:3 "$HFTRAIN" run quickstart "${common[@]}" trainer.max_steps=12 checkpoint.every_steps=4 \
    run.output_dir="$WORK/crash" >/dev/null 2>&1 &
  wait $! 2>/dev/null
  code=$?
  [ "$code" = 137 ] && ok || fail "the crash hook did not kill the save (exit $code)"
  [ ! -d crash/checkpoint-8 ] && ls -d crash/.tmp-checkpoint-8-* >/dev/null 2>&1 && ok || fail "torn save left: $(ls -a crash)"
  [ "$(cat crash/latest)" = "checkpoint-4" ] && ok || fail "latest moved to a torn checkpoint"
  run 0 resume crash
  has "resuming from crash/checkpoint-4" err
  ls -d crash/.tmp-checkpoint-* >/dev/null 2>&1 && fail "the torn staging directory was not cleaned up" || ok
  same_history straight crash 1 12 && ok || fail "the run resumed after a crash in a save diverged"
}

# --- SIGKILL at random moments, then resume until done: the history equals an uninterrupted run
# storm NAME EXTRA...: run NAME-calm straight and NAME killed four times at random moments
# and resumed, both with the overrides EXTRA; then compare their histories and weights
storm() {
  local name=$1 pid
  shift
  local runs=("${common[@]}" "$@" trainer.max_steps=24 checkpoint.every_steps=3)
  run 0 run quickstart "${runs[@]}" run.output_dir="$WORK/$name-calm"
  for attempt in 1 2 3 4; do
    if [ "$attempt" = 1 ]; then
      "$HFTRAIN" run quickstart "${runs[@]}" run.output_dir="$WORK/$name" >/dev/null 2>&1 &
    else
      "$HFTRAIN" resume "$name" >/dev/null 2>&1 &
    fi
    pid=$!
    sleep "$(awk -v s="$RANDOM" 'BEGIN { srand(s); printf "%.2f", 0.8 + rand() * 2.5 }')"
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  # Finish the run unless an attempt already did (a kill can also land after the last save).
  if [ "$(cat "$name/latest" 2>/dev/null)" != checkpoint-24 ]; then
    if ls -d "$name"/checkpoint-* >/dev/null 2>&1; then
      run 0 resume "$name"
    else
      run 0 run quickstart "${runs[@]}" run.output_dir="$WORK/$name" --resume
    fi
  fi
  same_history "$name-calm" "$name" 1 24 && ok || fail "$name: killed-and-resumed history differs from the uninterrupted run"
  cmp -s "$name-calm/checkpoint-24/model.safetensors" "$name/checkpoint-24/model.safetensors" && ok \
    || fail "$name: killed-and-resumed weights differ"
}
kill_storm() { storm killed; }
# bf16 weights with fp32 masters (trainer.param_dtype=bf16): the checkpoints hold the masters, so
# the killed run resumes bit for bit too
kill_storm_bf16() { storm killed-bf16 trainer.precision=bf16 trainer.param_dtype=bf16; }
# Muon's momenta and AdamW's moments in one state, and NEFTune's noise from the checkpointed generator
kill_storm_muon() { storm killed-muon optimizer.name=muon trainer.neftune_noise_alpha=5; }
# APOLLO's projections drawn again at the same steps from the saved seeds
kill_storm_apollo() { storm killed-apollo optimizer.name=apollo_adamw optimizer.apollo.rank=4 optimizer.apollo.update_proj_gap=5; }
# EMA weights in bf16's fp32 masters: the average swapped in for each evaluation and saved with the
# optimizer state, so the evaluations and the exported average resume bit for bit too
kill_storm_ema() {
  storm killed-ema trainer.ema.enabled=true trainer.ema.decay=0.9 trainer.precision=bf16 trainer.param_dtype=bf16
  cmp -s killed-ema-calm/final/model.safetensors killed-ema/final/model.safetensors && ok \
    || fail "killed-ema: the exported averages differ"
}
# schedule_free_adamw's two points switched in bf16's fp32 masters
kill_storm_schedule_free_bf16() {
  storm killed-sf-bf16 optimizer.name=schedule_free_adamw scheduler.name=constant scheduler.warmup_steps=0 \
    trainer.precision=bf16 trainer.param_dtype=bf16
}

# --- checkpoint.async: the checkpoints and history of `straight`, written in the background (the
# stall and the write in the metrics), and resumed bit for bit
async_exact() {
  straight
  run 0 run quickstart "${common[@]}" trainer.max_steps=12 checkpoint.every_steps=6 checkpoint.async=true \
    run.output_dir="$WORK/async" || return
  has "in the background" err
  same_history straight async 1 12 && ok || fail "async: saving in the background changed the history"
  for f in model.safetensors "$shard" trainer_state.json data.json rng.safetensors scheduler.json; do
    cmp -s "straight/checkpoint-6/$f" "async/checkpoint-6/$f" && ok || fail "async: checkpoint-6/$f differs from straight's"
  done
  [ "$(cat async/latest)" = checkpoint-12 ] && ok || fail "async: latest is $(cat async/latest)"
  [ -n "$(check_py metric "$WORK/async/metrics.jsonl" 7 checkpoint/stall_ms)" ] && ok \
    || fail "async: no checkpoint/stall_ms after the save"
  run 0 verify async
  mkdir async-half && cp -r async/checkpoint-6 async-half/
  run 0 resume async-half || return
  same_history straight async-half 7 12 && ok || fail "async: the resumed history differs"
}
# Background writes slowed down (HFTRAIN_TEST_SLOW_SAVE) so that many kills land inside one: no torn
# checkpoint, `latest` never dangling, and the resumed run equal to the calm one
kill_storm_async() {
  export HFTRAIN_TEST_SLOW_SAVE=60
  storm killed-async checkpoint.async=true
  unset HFTRAIN_TEST_SLOW_SAVE
  run 0 verify killed-async
  [ -d "killed-async/$(cat killed-async/latest)" ] && ok || fail "killed-async: latest names a missing checkpoint"
}

# --- EMA turned on at a resume starts from the resumed weights and leaves the training alone;
# turned off, the checkpoint's average is dropped with a note
ema_toggle() {
  straight
  mkdir ema-on && cp -r straight/checkpoint-6 ema-on/
  run 0 resume ema-on trainer.ema.enabled=true trainer.ema.evaluate=false || return
  has "the average starts from the resumed weights" err
  same_history straight ema-on 7 12 && ok || fail "ema_toggle: EMA changed the training or its evaluations"
  cmp -s straight/final/model.safetensors ema-on/final/model.safetensors \
    && fail "ema_toggle: final/ holds the trained weights, not the average" || ok
  cmp -s straight/checkpoint-12/model.safetensors ema-on/checkpoint-12/model.safetensors && ok \
    || fail "ema_toggle: the checkpoint does not hold the trained weights"
  mkdir ema-off && cp -r ema-on/checkpoint-12 ema-off/
  run 0 resume ema-off trainer.max_steps=14 trainer.ema.enabled=false || return
  has "the checkpoint's EMA weights are dropped" err
}

# --- a full disk and a read-only run directory fail cleanly, earlier checkpoints intact
# (through `unshare -rm`: a small tmpfs, a read-only bind mount)
namespaces() {
  unshare -rm true 2>/dev/null && return 0
  echo "note: unshare -rm is not allowed here; the full-disk and read-only checks are skipped"
  return 1
}
# disk_full TAG EXTRA...: a run with EXTRA settings on a 1200 KiB tmpfs stops with exit 1 and a
# clear message, no staging directory left, every checkpoint verifying and `latest` naming one;
# with on_save_error=continue it logs the failed saves and trains to the end
disk_full() {
  local tag=$1
  shift
  namespaces || return 0
  mkdir "$tag" "$tag-2"
  unshare -rm bash -c "
    mount -t tmpfs -o size=1200k tmpfs '$WORK/$tag' || exit 99
    '$HFTRAIN' run quickstart ${common[*]@Q} ${*@Q} trainer.max_steps=12 checkpoint.every_steps=2 \
      run.output_dir='$WORK/$tag/run' >'$WORK/$tag.out' 2>'$WORK/$tag.err'
    echo \$? > '$WORK/$tag.code'
    ls -a '$WORK/$tag/run' > '$WORK/$tag.ls'
    '$HFTRAIN' verify '$WORK/$tag/run' > '$WORK/$tag.verify'; echo \$? >> '$WORK/$tag.verify'
    cat '$WORK/$tag/run/latest' > '$WORK/$tag.latest'
  "
  [ "$(cat "$tag.code")" = 1 ] && ok || fail "$tag: exit $(cat "$tag.code"), expected 1: $(tail -c 300 "$tag.err")"
  grep -q "disk is full" "$tag.err" && ok || fail "$tag: no clear message: $(tail -c 300 "$tag.err")"
  grep -qE 'std::|terminate|what\(\)' "$tag.err" && fail "$tag leaked internals" || ok
  grep -q '.tmp-checkpoint' "$tag.ls" && fail "$tag left a staging directory" || ok
  [ "$(tail -n 1 "$tag.verify")" = 0 ] && ok || fail "$tag: checkpoints after a full disk do not verify: $(cat "$tag.verify")"
  grep -q "$(cat "$tag.latest")" "$tag.ls" && ok || fail "$tag: latest points at a missing checkpoint"

  unshare -rm bash -c "
    mount -t tmpfs -o size=1200k tmpfs '$WORK/$tag-2' || exit 99
    '$HFTRAIN' run quickstart ${common[*]@Q} ${*@Q} trainer.max_steps=12 checkpoint.every_steps=2 \
      checkpoint.on_save_error=continue run.output_dir='$WORK/$tag-2/run' >/dev/null 2>'$WORK/$tag-2.err'
    cp '$WORK/$tag-2/run/metrics.jsonl' '$WORK/$tag-2.metrics'
  "
  grep -q "FAILED, training on" "$tag-2.err" && ok || fail "$tag: on_save_error=continue: no message: $(tail -c 300 "$tag-2.err")"
  grep -qE '"step": ?12[,}]' "$tag-2.metrics" && ok || fail "$tag: on_save_error=continue did not train to the end"
}
full_disk() { disk_full full; }
# ... and the background writer's failure, reported when its save is published
full_disk_async() { disk_full full-async checkpoint.async=true; }
read_only() {
  namespaces || return 0
  half
  mkdir -p ro && cp -r half ro/
  unshare -rm bash -c "
    mount --bind '$WORK/ro' '$WORK/ro' && mount -o remount,bind,ro '$WORK/ro' || exit 99
    '$HFTRAIN' resume '$WORK/ro/half/checkpoint-6' >'$WORK/ro.out' 2>'$WORK/ro.err'; echo \$? > '$WORK/ro.code'
  "
  # At start, before anything is written: the user's setting (run.output_dir), exit 2 as bad input.
  [ "$(cat ro.code)" = 2 ] && ok || fail "read-only: exit $(cat ro.code), expected 2: $(tail -c 300 ro.err)"
  grep -q "read-only" ro.err && ok || fail "read-only: no clear message: $(tail -c 300 ro.err)"
  run 0 verify ro/half/checkpoint-6
}

scenarios exact mixture verify overrides finetune no_overwrite owner vanish rotation crash_in_save kill_storm \
  kill_storm_bf16 kill_storm_muon kill_storm_apollo kill_storm_ema kill_storm_schedule_free_bf16 ema_toggle async_exact kill_storm_async full_disk full_disk_async read_only
