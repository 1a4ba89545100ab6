#!/usr/bin/env bash
# End-to-end: non-finite and divergent steps (trainer.on_nonfinite, trainer.spike.*) and numeric
# debugging (debug.detect_anomaly, debug.underflow_overflow), on the CPU. HFTRAIN_TEST_FAULT poisons
# a gradient (nan), a weight (nanweight) or scales a step's loss by 1000 (spike) at a given step:
# - skip drops the update, logs the step and its samples, and the run finishes with finite weights
#   (one rank, and two under ddp with the NaN on rank 1 alone); bad steps in a row stop it (exit 1,
#   and no checkpoint of weights that are not finite);
# - rollback reloads the newest checkpoint before the bad step and skips the samples that led to it,
#   read with the metrics (every other step) or, with spikes judged, at the step itself; it finishes
#   with finite weights; without a checkpoint before the step, or back at the same checkpoint too
#   often, it stops (exit 1);
# - stop exits 1 naming the step and the poisoned gradient, with a checkpoint that verifies;
# - a loss spike over trainer.spike.factor x the window's median is skipped;
# - debug.detect_anomaly names the backward operation; debug.underflow_overflow prints the module
#   frames and names the poisoned weight (exit 1); an encoder is refused (exit 2).
# Usage: divergence_test.sh path/to/hftrain [SCENARIO...] | --list   (tests/e2e/harness.sh)
source "$(dirname "${BASH_SOURCE[0]}")/harness.sh" "$@"

cookie_corpus
# 2 samples a step (micro-batch 2, one rank): step k draws samples 2(k-1) and 2(k-1)+1.
common=(data.train="$WORK/corpus/*" "data.separator='%'" data.validation_fraction=0.1 model.arch=gpt2 model.n_layer=2
        model.n_head=2 model.d_model=32 model.vocab_size=261 model.max_seq_len=64 data.seq_len=32
        trainer.micro_batch_size=2 trainer.grad_accum_steps=1 trainer.max_grad_norm=1.0 optimizer.lr=0.003
        trainer.log_every=1 trainer.max_steps=10 checkpoint.every_steps=3 checkpoint.at_end=true trainer.device=cpu
        trainer.eval_every=0 scheduler.warmup_steps=2)

# finite NAME: every tensor of the run's final model is finite
finite() {
  check_py finite "$WORK/$1/final/model.safetensors" && ok || fail "$1: the final weights are not all finite"
}
# same_weights A B: the final models of runs A and B are equal bit for bit
same_weights() {
  check_py equal-weights "$WORK/$1/final/model.safetensors" "$WORK/$2/final/model.safetensors" && ok \
    || fail "$1 and $2: the final weights differ"
}
# metric NAME STEP KEY: the value of KEY in the metrics record of STEP
metric() { check_py metric "$WORK/$1/metrics.jsonl" "$2" "$3"; }

# the run with step 5's gradient NaN under the default (skip), which skip_host compares with
skip_run() { HFTRAIN_TEST_FAULT=0:5:nan run 0 run quickstart "${common[@]}" run.output_dir="$WORK/skip"; }

# --- skip (the default): step 5's gradient is NaN
skip() {
  skip_run && {
    has "step 5 skipped (trainer.on_nonfinite=skip): the gradient norm is nan; the first non-finite: the gradient of" err
    has "samples 8-9; 1 in a row" err
    finite skip
    [ "$(metric skip 5 skipped_steps)" = 1 ] && ok || fail "skip: step 5's record does not count 1 skipped step"
    [ "$(metric skip 10 step)" = 10 ] && ok || fail "skip: the run did not reach step 10"
  }
}
# the same under ddp with the NaN on rank 1 alone: the reduction carries it, both ranks skip
skip_ddp() {
  HFTRAIN_TEST_FAULT=1:5:nan run 0 run quickstart "${common[@]}" run.output_dir="$WORK/skip-ddp" --nproc-per-node 2 && {
    has "step 5 skipped (trainer.on_nonfinite=skip): the gradient norm is nan" err
    finite skip-ddp
  }
}
# the verdict judged on the device (the default: no host read in the step) equals the one read on
# the host each step (a spike factor that no loss reaches forces that read): the same weights, bit
# for bit; read at a later logging step (log_every=4), the skip is reported then, with its samples
skip_host() {
  once skip skip_run
  HFTRAIN_TEST_FAULT=0:5:nan run 0 run quickstart "${common[@]}" trainer.spike.factor=1e30 \
    run.output_dir="$WORK/skip-host" && same_weights skip skip-host
  HFTRAIN_TEST_FAULT=0:5:nan run 0 run quickstart "${common[@]}" trainer.log_every=4 run.output_dir="$WORK/skip-late" && {
    has "step 5 skipped (trainer.on_nonfinite=skip): the gradient norm is nan; samples 8-9" err
    [ "$(metric skip-late 8 skipped_steps)" = 1 ] && ok || fail "skip-late: step 8's record does not count 1 skipped step"
    same_weights skip skip-late
  }
}
# a poisoned weight keeps every step bad: 3 in a row stop the run, exit 1; its weights are not
# finite, so no checkpoint of them is saved (a resume would pick it as the newest)
consecutive_skips() {
  HFTRAIN_TEST_FAULT=0:4:nanweight run 1 run quickstart "${common[@]}" trainer.max_consecutive_skips=3 \
    run.output_dir="$WORK/skips" && {
    has "step 6: the loss is nan; 3 bad steps in a row (trainer.max_consecutive_skips); the first non-finite: parameter" err
    has "the weights are not finite, so no checkpoint was saved" err
    [ ! -e skips/checkpoint-6 ] && [ -d skips/checkpoint-3 ] && ok || fail "skips: expected checkpoint-3 and no checkpoint-6"
  }
}

# --- rollback, read with the metrics (every other step): step 5's NaN is found after step 6, the
# run goes back to checkpoint-3 and skips the samples of steps 4-5; with spikes judged (each step
# read), at the step itself
rollback() {
  HFTRAIN_TEST_FAULT=0:5:nan run 0 run quickstart "${common[@]}" trainer.on_nonfinite=rollback trainer.log_every=2 \
    run.output_dir="$WORK/rollback" && {
    has "step 5: the gradient norm is not finite; rolled back to $WORK/rollback/checkpoint-3 (step 3) and skipped samples 6-9, the data of steps 4-5" err
    finite rollback
    [ "$(metric rollback 10 step)" = 10 ] && ok || fail "rollback: the run did not reach step 10"
  }
  HFTRAIN_TEST_FAULT=0:5:nan run 0 run quickstart "${common[@]}" trainer.on_nonfinite=rollback trainer.spike.factor=1000 \
    trainer.spike.window=2 run.output_dir="$WORK/rollback-now" && {
    has "step 5: the gradient norm is nan; rolled back to $WORK/rollback-now/checkpoint-3 (step 3) and skipped samples 6-9" err
    finite rollback-now
  }
}
# divergence that comes back after each rollback to checkpoint-3 (steps 4, 5 and 6 in turn, good
# steps between): the third rollback there stops the run (trainer.max_consecutive_skips=2); and
# without a checkpoint before the bad step: stop
rollback_limits() {
  HFTRAIN_TEST_FAULT=0:4:nan,0:5:nan,0:6:nan run 1 run quickstart "${common[@]}" trainer.on_nonfinite=rollback \
    trainer.spike.factor=1000 trainer.spike.window=2 trainer.max_consecutive_skips=2 run.output_dir="$WORK/rollbacks" \
    && has "step 6: the gradient norm is nan; rolled back to $WORK/rollbacks/checkpoint-3 2 times already (trainer.max_consecutive_skips)" err
  HFTRAIN_TEST_FAULT=0:2:nan run 1 run quickstart "${common[@]}" trainer.on_nonfinite=rollback \
    run.output_dir="$WORK/rollback-none" && has "found no checkpoint before it that verifies" err
}

# --- stop: exit 1 naming the step and the gradient, a checkpoint for debugging that verifies
stop() {
  HFTRAIN_TEST_FAULT=0:5:nan run 1 run quickstart "${common[@]}" trainer.on_nonfinite=stop run.output_dir="$WORK/stop" && {
    has "step 5: the gradient norm is nan; the first non-finite: the gradient of" err
    has "stopped (trainer.on_nonfinite=stop); saved $WORK/stop/checkpoint-5 for debugging" err
    has "the step's samples are 8-9" err
    run 0 verify "$WORK/stop/checkpoint-5"
  }
}

# --- a loss spike (step 7's loss x 1000) against the median of the last 4 steps: skipped
spike() {
  HFTRAIN_TEST_FAULT=0:7:spike run 0 run quickstart "${common[@]}" trainer.spike.factor=5 trainer.spike.window=4 \
    run.output_dir="$WORK/spike" && {
    has "step 7 skipped (trainer.on_nonfinite=skip): a loss spike:" err
    has "x the median" err
    finite spike
  }
}

# --- numeric debugging
debug() {
  HFTRAIN_TEST_FAULT=0:2:nanweight run 1 run quickstart "${common[@]}" debug.detect_anomaly=true \
    run.output_dir="$WORK/anomaly" && {
    has "debug.detect_anomaly: step 2: Function '" err
    has "returned nan values" err
  }
  HFTRAIN_TEST_FAULT=0:2:nanweight run 1 run quickstart "${common[@]}" debug.underflow_overflow=true debug.max_frames=5 \
    run.output_dir="$WORK/overflow" && {
    has "debug.underflow_overflow: step 2: an inf or NaN first in weight embed_tokens.weight" err
    has "module frames of the forward" err
    has "step 1 lm_head" err  # the frames before it: the end of step 1's forward
  }
  run 2 run quickstart "${common[@]}" model.arch=bert debug.underflow_overflow=true run.output_dir="$WORK/bert" \
    && has "debug.underflow_overflow traces the decoders' modules" err
}

scenarios skip skip_ddp skip_host consecutive_skips rollback rollback_limits stop spike debug
