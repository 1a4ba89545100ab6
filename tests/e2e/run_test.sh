#!/usr/bin/env bash
# End-to-end: a short training run through the real binary (loss falls, metrics.jsonl and
# TensorBoard files have their fields, the final model generates), and bad data files that must
# each give one clear exit-2 message naming the file and line.
# Usage: run_test.sh path/to/hftrain [SCENARIO...] | --list   (tests/e2e/harness.sh)
source "$(dirname "${BASH_SOURCE[0]}")/harness.sh" "$@"

# A small corpus of fortune-style cookies.
cookie_corpus 60
common=(data.train="$WORK/corpus/*" "data.separator='%'" data.validation_fraction=0.1 model.n_layer=2 model.n_head=2
        model.d_model=32 model.max_seq_len=64 data.seq_len=32 model.vocab_size=260 trainer.micro_batch_size=8
        optimizer.lr=0.003 scheduler.warmup_steps=5 trainer.log_every=10)
chat=(data.train="$WORK/chat.jsonl" data.format=chat data.validation_fraction=0 trainer.eval_every=0 trainer.max_steps=6 data.cache_dir="$WORK/ccache")

# run1: the short run whose model the generate and chat-template checks use
short_run() {
  run 0 run quickstart "${common[@]}" trainer.max_steps=60 trainer.eval_every=30 run.output_dir="$WORK/run1" run.export_hf=true
}
# chat.jsonl: two conversations, the second starting with the assistant
chat_file() {
  printf '{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}\n' > chat.jsonl
  printf '{"messages": [{"role": "assistant", "content": "first"}]}\n' >> chat.jsonl
}

# --- a short run: the loss falls, the files are there
short() {
  short_run
  for f in config.yaml metrics.jsonl train.log final/model.safetensors final/model.json final/tokenizer.json \
           final-hf/config.json final-hf/model.safetensors final-hf/tokenizer.json; do
    [ -s "run1/$f" ] && ok || fail "run1/$f missing or empty"
  done
  ls run1/events.out.tfevents.* >/dev/null 2>&1 && ok || fail "no TensorBoard event file"
  check_py run-metrics "$WORK/run1/metrics.jsonl" && ok || fail "metrics.jsonl check failed"
  grep -q "name: quickstart" run1/config.yaml && ok || fail "config.yaml lacks the resolved run name"
  run 0 generate run1 --prompt "The cat" --max-new-tokens 20 --seed 3
  has "The cat" out
}

# --- prepare: the token cache built ahead of a run (on every data.num_workers thread), then hit
prepare() {
  run 0 prepare quickstart "${common[@]}" trainer.max_steps=6 data.cache_dir="$WORK/pcache" data.num_workers=3
  has "token cache: 0 hit(s), 1 built" out && has "3 threads" out && has "train: " out && has "validation: " out
  run 0 prepare quickstart "${common[@]}" trainer.max_steps=6 data.cache_dir="$WORK/pcache"
  has "token cache: 1 hit(s), 0 built" out
  run 0 run quickstart "${common[@]}" trainer.max_steps=6 data.cache_dir="$WORK/pcache" run.output_dir="$WORK/prepared"
  has "token cache hit" err
  run 2 prepare && has "needs a RECIPE" err
  run 2 prepare quickstart "${common[@]}" trainer.max_steps=6 data.cache=false && has "data.cache is false" err
  run 2 prepare quickstart "${common[@]}" trainer.max_steps=6 data.train="$WORK/nothing-here.txt" && has "nothing-here.txt" err
}

# --- chat templates: rendered through a named template; bad templates and raising records exit 2
chat_templates() {
  once run1 short_run
  chat_file
  run 0 prepare quickstart "${common[@]}" "${chat[@]}" data.chat_template=chatml && has "token cache: 0 hit(s), 1 built" out
  printf '{%% for m in messages %%}{{ m.content | wordwrap }}{%% endfor %%}\n' > unsupported.jinja
  run 2 prepare quickstart "${common[@]}" "${chat[@]}" data.chat_template="$WORK/unsupported.jinja"
  has "unsupported.jinja" err && has "wordwrap" err
  printf '{%% for m in messages %%}\n{%% if loop.first and m.role != "user" %%}{{ raise_exception("start with a user turn") }}{%% endif %%}{{ m.content }}{%% endfor %%}' > strict.jinja
  run 2 prepare quickstart "${common[@]}" "${chat[@]}" data.chat_template="$WORK/strict.jinja"
  has "chat.jsonl:2" err && has "start with a user turn" err
  run 0 tokenizer render --chat "$WORK/chat.jsonl" --tokenizer "$WORK/run1/final" --template chatml --limit 1
  has "chatml (built in)" out && has "⟦hello<|im_end|>" out && has "chat.jsonl:1: " out && has "first 1 records" out
  run 2 tokenizer render --chat "$WORK/chat.jsonl" --tokenizer "$WORK/run1/final" --template "$WORK/strict.jinja"
  has "chat.jsonl:2" err && has "start with a user turn" err
  run 0 generate run1 --prompt "hi" --chat --template chatml --max-new-tokens 3 --seed 1
  has "<|im_start|>user
hi<|im_end|>
<|im_start|>assistant" out
  run 0 generate run1 --prompt "hi" --chat --max-new-tokens 3 --seed 1 && has "<|user|>
hi
<|assistant|>" out
  run 2 generate run1 --prompt "hi" --chat --template "$WORK/unsupported.jinja" && has "wordwrap" err
  # a model trained through a template keeps it: generate --chat (auto) finds it in final/
  run 0 run quickstart "${common[@]}" "${chat[@]}" data.chat_template=chatml run.output_dir="$WORK/chatrun" checkpoint.every_steps=3
  [ -s chatrun/final/chat_template.jinja ] && ok || fail "chatrun/final/chat_template.jinja missing"
  [ -s chatrun/checkpoint-3/chat_template.jinja ] && ok || fail "chatrun/checkpoint-3/chat_template.jinja missing"
  run 0 verify chatrun
  run 0 generate chatrun --prompt "hi" --chat --max-new-tokens 3 --seed 1 && has "<|im_start|>user" out
  run 2 prepare quickstart "${common[@]}" "${chat[@]}" data.chat_template=no-such-template && has "data.chat_template" err
}

# --- a weighted mixture: per-source tokens and epochs in metrics.jsonl, per-source evaluation;
# chat data packs with document masking by default (plan's activation figure counts the mask)
mixture() {
  local mix
  [ -e chat.jsonl ] || chat_file
  for i in $(seq 1 40); do
    printf '{"messages": [{"role": "user", "content": "question %d"}, {"role": "assistant", "content": "answer %d"}]}\n' "$i" "$i"
  done > mixchat.jsonl
  mix=("data.train=[{path: $WORK/corpus/cookies, weight: 0.25, name: cookies, format: text}, {path: $WORK/mixchat.jsonl, weight: 0.75, format: chat}]"
       data.validation_fraction=0.1 trainer.max_steps=20 trainer.eval_every=10 trainer.log_every=5 data.cache_dir="$WORK/mcache")
  run 0 run quickstart "${common[@]}" "${mix[@]}" run.output_dir="$WORK/mixrun"
  check_py mixture-metrics "$WORK/mixrun/metrics.jsonl" && ok || fail "mixture metrics check failed"
  grep -q "weight: 0.75" mixrun/config.yaml && ok || fail "config.yaml lacks the mixture's weights"
  run 0 plan quickstart "${common[@]}" "${chat[@]}" --nproc 1 && has "document mask" out
  run 0 plan quickstart "${common[@]}" --nproc 1 && has "activations per micro-batch" out
  run 0 plan quickstart "${common[@]}" model.arch=llama model.n_experts=4 model.experts_per_token=2 --nproc 1 &&
    has "mixture of experts: 4 experts" out && has "2 per token; active per token:" out
  run 2 run quickstart "${common[@]}" "data.train=[{path: $WORK/corpus/cookies, weight: -1}]" run.output_dir="$WORK/badw1"
  has "weight" err && has "out of range" err
  run 2 run quickstart "${common[@]}" "data.train=[{path: $WORK/corpus/cookies, weight: 0}, {path: $WORK/mixchat.jsonl, weight: 0}]" run.output_dir="$WORK/badw2"
  has "every weight in \`data.train\` is 0" err
  run 2 run quickstart "${common[@]}" "data.train=[{path: $WORK/corpus/cookies, weight: 1}, $WORK/mixchat.jsonl]" run.output_dir="$WORK/badw3"
  has "without a weight" err
  [ ! -e badw1 ] && [ ! -e badw2 ] && [ ! -e badw3 ] && ok || fail "a refused mixture left a run directory"
}

# --- SIGTERM: the current step finishes, final/ is saved, the exit code is 128+15
sigterm() {
  local pid code
  "$HFTRAIN" run quickstart "${common[@]}" trainer.max_steps=100000 run.output_dir="$WORK/sig" >/dev/null 2>"$WORK/sig.err" &
  pid=$!
  for _ in $(seq 1 100); do grep -q "step 10/" "$WORK/sig.err" 2>/dev/null && break; sleep 0.2; done
  kill -TERM "$pid"
  wait "$pid"
  code=$?
  [ "$code" = 143 ] && ok || fail "SIGTERM: exit $code, expected 143: $(tail -c 400 "$WORK/sig.err")"
  [ -s sig/final/model.safetensors ] && ok || fail "SIGTERM: final/ not saved"
}

# --- bad data: one clear message naming the file (and line), exit 2
bad_data() {
  run 2 run quickstart "${common[@]}" trainer.max_steps=20 data.train="$WORK/nothing-here.txt" run.output_dir="$WORK/bad1"
  has "nothing-here.txt" err
  : > empty.txt
  run 2 run quickstart "${common[@]}" trainer.max_steps=20 data.train="$WORK/empty.txt" run.output_dir="$WORK/bad2"
  has "empty.txt" err
  head -c 3000 /dev/urandom > garbage.txt
  run 2 run quickstart "${common[@]}" trainer.max_steps=20 data.train="$WORK/garbage.txt" run.output_dir="$WORK/bad3"
  has "garbage.txt" err
  printf 'good line\nbad \xff\xfe line\n' > badutf8.txt
  run 2 run quickstart "${common[@]}" trainer.max_steps=20 data.train="$WORK/badutf8.txt" ~data.separator run.output_dir="$WORK/bad4"
  has "badutf8.txt:2" err
  printf '{"text": "fine"}\n{"other": "no text field"}\n' > missing.jsonl
  run 2 run quickstart "${common[@]}" trainer.max_steps=20 data.train="$WORK/missing.jsonl" run.output_dir="$WORK/bad5"
  has "missing.jsonl:2" err
  has "text" err
}

# --- trainer.deterministic: two runs on 2 intra-op threads give the same bits; NEFTune's noise
# changes the training losses only; muon and warmup_ratio train
switches() {
  local sw=("${common[@]}" trainer.max_steps=12 trainer.eval_every=6 trainer.eval_batches=2 trainer.log_every=1
            model.dropout=0.1 trainer.deterministic=true)
  for n in a b; do
    OMP_NUM_THREADS=2 run 0 run quickstart "${sw[@]}" run.output_dir="$WORK/det-$n" || return
  done
  has "trainer.deterministic: deterministic kernels only" err
  check_py same-history "$WORK/det-a/metrics.jsonl" "$WORK/det-b/metrics.jsonl" 1 12 && ok \
    || fail "deterministic: two runs' histories differ"
  cmp -s det-a/final/model.safetensors det-b/final/model.safetensors && ok || fail "deterministic: weights differ"
  OMP_NUM_THREADS=2 run 0 run quickstart "${sw[@]}" trainer.neftune_noise_alpha=5 run.output_dir="$WORK/neftune"
  check_py losses-differ "$WORK/det-a/metrics.jsonl" "$WORK/neftune/metrics.jsonl" 1 && ok \
    || fail "NEFTune's noise did not change the first step's loss"
  run 0 run quickstart "${common[@]}" trainer.max_steps=20 optimizer.name=muon optimizer.lr=0.02 \
    optimizer.muon.adjust_lr=match_rms_adamw scheduler.warmup_steps=0 scheduler.warmup_ratio=0.1 \
    run.output_dir="$WORK/muon"
  check_py loss-falls "$WORK/muon/metrics.jsonl" && ok || fail "muon: the loss did not fall"
  run 2 run quickstart "${common[@]}" scheduler.warmup_ratio=0.1 run.output_dir="$WORK/both-warmups"
  has "set only one" err
  run 2 run quickstart "${common[@]}" optimizer.name=muon "optimizer.muon.params=['*norm*']" \
    run.output_dir="$WORK/muon-norm"
  has "Muon orthogonalises matrices" err
}

# --- the best model: trainer.metric_for_best_model ranks evaluations (eval_ppl: lower is better unless
# greater_is_better says otherwise), load_best_model_at_end makes final/ the best checkpoint's weights; evaluations at
# the start and at each epoch's end; `hftrain evaluate` gives the figures a run logs
best_model() {
  local best steps
  run 0 run quickstart "${common[@]}" trainer.max_steps=20 trainer.eval_every=5 trainer.eval_batches=2 \
    checkpoint.keep_best=true checkpoint.every_steps=100 trainer.load_best_model_at_end=true \
    trainer.metric_for_best_model=eval_ppl trainer.greater_is_better=true trainer.eval_on_start=true \
    run.output_dir="$WORK/bestrun" || return
  best=$(check_py best-eval-step "$WORK/bestrun/metrics.jsonl" eval_ppl max)
  [ "$(check_py eval-steps "$WORK/bestrun/metrics.jsonl")" = "0 5 10 15 20" ] && ok \
    || fail "evaluations at $(check_py eval-steps "$WORK/bestrun/metrics.jsonl"), expected 0 5 10 15 20"
  [ -d "bestrun/checkpoint-$best" ] && ok || fail "the best checkpoint (step $best) was not kept"
  has "the final model is step $best's (eval_ppl" err
  check_py same-weights "$WORK/bestrun/checkpoint-$best/model.safetensors" "$WORK/bestrun/final/model.safetensors" 0 \
    && ok || fail "final/ does not hold the best checkpoint's (step $best) weights"
  # lower is better by default for a perplexity: the last evaluation is then the best, final/ the last step's
  run 0 run quickstart "${common[@]}" trainer.max_steps=20 trainer.eval_every=5 trainer.eval_batches=2 \
    checkpoint.keep_best=true checkpoint.every_steps=100 trainer.load_best_model_at_end=true \
    trainer.metric_for_best_model=eval_ppl run.output_dir="$WORK/lowrun" || return
  [ "$(check_py best-eval-step "$WORK/lowrun/metrics.jsonl" eval_ppl)" = 20 ] && ok || fail "eval_ppl did not fall"
  run 0 evaluate lowrun quickstart "${common[@]}" trainer.eval_batches=2 --output "$WORK/eval.json"
  has "eval_loss" out && has "eval_ppl" out
  check_py last-eval-equals "$WORK/lowrun/metrics.jsonl" "$WORK/eval.json" && ok \
    || fail "hftrain evaluate differs from the run's last evaluation"
  # at each epoch's end (60 cookies, 54 to train, 8 a step: 7 steps an epoch)
  run 0 run quickstart "${common[@]}" trainer.max_epochs=2 trainer.eval_on_epoch_end=true trainer.eval_batches=1 \
    run.output_dir="$WORK/epochrun" || return
  steps=$(check_py eval-steps "$WORK/epochrun/metrics.jsonl")
  [ "$(wc -w <<<"$steps")" = 2 ] && ok || fail "evaluations at steps '$steps', expected one per epoch"
  run 2 run quickstart "${common[@]}" trainer.max_steps=10 trainer.eval_every=5 trainer.metric_for_best_model=eval_bleu \
    run.output_dir="$WORK/badmetric"
  has "trainer.metric_for_best_model=eval_bleu is not among this run's evaluation figures" err
  run 2 evaluate "$WORK/nowhere" quickstart "${common[@]}"
  has "nowhere" err
}

# --- EMA weights (trainer.ema.*): the training is the plain run's bit for bit; evaluations measure
# the average and final/ holds it (`hftrain evaluate` of final/ gives the last evaluation's loss);
# with load_best_model_at_end, final/ is the best checkpoint's average; either use can be turned
# off; `hftrain plan` counts the average; schedule_free_adamw, which averages itself, is refused
ema() {
  local e=("${common[@]}" trainer.max_steps=12 trainer.eval_every=6 trainer.eval_batches=2 trainer.log_every=1)
  local on=(trainer.ema.enabled=true trainer.ema.decay=0.9) want got
  run 0 run quickstart "${e[@]}" run.output_dir="$WORK/ema-none" || return
  run 0 run quickstart "${e[@]}" "${on[@]}" run.output_dir="$WORK/ema" || return
  check_py close "$WORK/ema-none/metrics.jsonl" "$WORK/ema/metrics.jsonl" 1 12 0 && ok \
    || fail "ema: keeping the average changed the training"
  [ "$(check_py metric "$WORK/ema/metrics.jsonl" 6 eval_loss)" != \
    "$(check_py metric "$WORK/ema-none/metrics.jsonl" 6 eval_loss)" ] && ok \
    || fail "ema: the evaluation did not measure the average"
  run 0 evaluate ema quickstart "${e[@]}" --output "$WORK/ema-eval.json"
  check_py last-eval-equals "$WORK/ema/metrics.jsonl" "$WORK/ema-eval.json" && ok \
    || fail "ema: final/ is not the average the last evaluation measured"
  run 0 run quickstart "${e[@]}" "${on[@]}" trainer.ema.evaluate=false trainer.ema.export=false \
    run.output_dir="$WORK/ema-unused" || return
  check_py same-history "$WORK/ema-none/metrics.jsonl" "$WORK/ema-unused/metrics.jsonl" 1 12 && ok \
    || fail "ema: evaluate=false still evaluated the average"
  cmp -s ema-none/final/model.safetensors ema-unused/final/model.safetensors && ok \
    || fail "ema: export=false still exported the average"
  # greater_is_better makes step 6's evaluation the best: final/ is checkpoint-6's average
  run 0 run quickstart "${e[@]}" "${on[@]}" checkpoint.keep_best=true checkpoint.every_steps=100 \
    trainer.load_best_model_at_end=true trainer.greater_is_better=true run.output_dir="$WORK/ema-best" || return
  has "the final model is step 6's" err
  run 0 evaluate ema-best quickstart "${e[@]}" --output "$WORK/ema-best.json"
  want=$(check_py metric "$WORK/ema-best/metrics.jsonl" 6 eval_loss)
  got=$("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["eval_loss"])' "$WORK/ema-best.json")
  awk -v a="$want" -v b="$got" 'BEGIN { d = a - b; exit !(d * d <= 1e-18 * a * a) }' && ok \
    || fail "ema: final/ evaluates to $got, not step 6's $want"
  run 0 plan quickstart "${e[@]}" "${on[@]}" --nproc 2
  has "(4 of them trainer.ema's average)" out
  run 2 run quickstart "${e[@]}" "${on[@]}" optimizer.name=schedule_free_adamw scheduler.name=constant \
    scheduler.warmup_steps=0 run.output_dir="$WORK/ema-sf"
  has "schedule_free_adamw, which evaluates and keeps its own average" err
  run 2 run quickstart "${e[@]}" "${on[@]}" optimizer.name=muon distributed.strategy=zero1 run.output_dir="$WORK/ema-z1"
  has "partitions its state by whole parameters" err
}

# --- the user's callbacks: the example plugin stops the run at a target eval loss and writes its
# CSV; plugins that cannot start are refused (exit 2), one that fails mid-run stops it (exit 1, the
# checkpoint saved); a plugin's save and evaluate asks; on 2 ranks rank 0's plugin stops both; command
# callbacks copy each checkpoint, see the event's facts, and fail loudly only when required
callbacks() {
  local build plugins example events
  build=$(cd "$(dirname "$HFTRAIN")/../.." && pwd)
  example=$build/examples/libstop_at_loss.so
  plugins=$build/plugins
  [ -f "$example" ] && [ -f "$plugins/libtest_plugin.so" ] || { fail "the plugins are not built under $build"; return; }
  local cb=("${common[@]}" trainer.max_steps=30 trainer.eval_every=5 trainer.eval_batches=1 trainer.log_every=2)
  run 0 run quickstart "${cb[@]}" "callbacks=[{plugin: $example, args: {target: '99', csv: $WORK/evals.csv}}]" \
    run.output_dir="$WORK/cbstop" || return
  has "asked to stop after step 5" err && has "stopped after step 5: a callback asked" err
  [ "$(cat evals.csv | cut -d, -f1)" = 5 ] && ok || fail "the example's CSV: $(cat evals.csv)"
  [ -s cbstop/final/model.safetensors ] && [ -d cbstop/checkpoint-5 ] && ok || fail "the stopped run lacks final/ or checkpoint-5"
  run 2 run quickstart "${cb[@]}" "callbacks=[{plugin: $WORK/no-such-plugin.so}]" run.output_dir="$WORK/cbmissing"
  has "no-such-plugin.so: cannot be loaded" err
  run 2 run quickstart "${cb[@]}" "callbacks=[{plugin: $plugins/libtest_plugin_abi99.so}]" run.output_dir="$WORK/cbabi"
  has "built against plugin ABI version 99, this hftrain speaks version 1" err
  run 2 run quickstart "${cb[@]}" "callbacks=[{plugin: $example}]" run.output_dir="$WORK/cbrefuse"
  has "it refused to start: args needs a target eval loss" err
  local libm
  libm=$(ldconfig -p 2>/dev/null | awk '/libm\.so\.6 / {print $NF; exit}')
  if [ -n "$libm" ]; then
    run 2 run quickstart "${cb[@]}" "callbacks=[{plugin: $libm}]" run.output_dir="$WORK/cbsymbol"
    has "has no symbol \`hftrain_plugin_abi_version\`" err
  fi
  run 1 run quickstart "${cb[@]}" "callbacks=[{plugin: $plugins/libtest_plugin.so, args: {fail_at: '3'}}]" \
    run.output_dir="$WORK/cbfail"
  has "failed at step 3: failing at step 3 as asked" err
  [ -d cbfail/checkpoint-3 ] && ok || fail "the run a plugin failed has no checkpoint-3"
  events=$WORK/events.txt
  run 0 run quickstart "${cb[@]}" trainer.max_steps=6 \
    "callbacks=[{plugin: $plugins/libtest_plugin.so, args: {events: $events, save_at: '2', evaluate_at: '3'}}]" \
    run.output_dir="$WORK/cbasks" || return
  has "checkpoint saved (a callback asked)" err
  [ -d cbasks/checkpoint-2 ] && ok || fail "the save a plugin asked for is missing"
  [ "$(check_py eval-steps "$WORK/cbasks/metrics.jsonl")" = "3 5 6" ] && ok \
    || fail "evaluations at $(check_py eval-steps "$WORK/cbasks/metrics.jsonl"), expected 3 5 6"
  # begin; step ends (figures on logging steps); evaluations; saves; end
  grep -qx "1 0" "$events" && grep -qx "2 1" "$events" && grep -qx "2 2 loss lr grad_norm" "$events" \
    && grep -q "^3 3 eval_loss eval_ppl" "$events" && grep -q "^4 2 .*checkpoint-2" "$events" \
    && grep -q "^5 6" "$events" && ok || fail "the plugin's events: $(cat "$events")"
  run 0 run quickstart "${cb[@]}" "callbacks=[{plugin: $plugins/libtest_plugin.so, args: {stop_at: '4'}}]" \
    run.output_dir="$WORK/cbranks" --nproc-per-node 2 || return
  grep '"type":"train"' cbranks/metrics.jsonl | tail -1 | grep -q '"step":4,' && has "stopped after step 4" err \
    && [ -d cbranks/checkpoint-4 ] && ok || fail "2 ranks did not stop together after step 4: $(tail -c 300 cbranks/metrics.jsonl)"
  # rank 0's plugin fails: every rank stops after the step (no rank waits in a collective), exit 1
  run 1 run quickstart "${cb[@]}" "callbacks=[{plugin: $plugins/libtest_plugin.so, args: {fail_at: '3'}}]" \
    run.output_dir="$WORK/cbranksfail" --nproc-per-node 2
  has "failing at step 3 as asked" err && [ -d cbranksfail/checkpoint-3 ] && ok \
    || fail "2 ranks: the plugin's failure did not stop both with checkpoint-3"
  # commands: copy each checkpoint (in the background, waited for at the end), see the facts
  run 0 run quickstart "${cb[@]}" trainer.max_steps=6 checkpoint.every_steps=2 \
    "callbacks=[{command: 'mkdir -p \"\$HFTRAIN_RUN_DIR/copies\" && cp -r \"\$HFTRAIN_CHECKPOINT\" \"\$HFTRAIN_RUN_DIR/copies/\"', on: [save]}, {command: 'echo \"\$HFTRAIN_EVENT \$HFTRAIN_STEP \$HFTRAIN_STATUS\" >> $WORK/facts.txt; cat \"\$HFTRAIN_METRICS\" >> $WORK/facts.txt', on: [begin, evaluate, end], background: false}, {command: 'echo oops; exit 3', on: [end]}]" \
    run.output_dir="$WORK/cbcmd" || return
  [ -f cbcmd/copies/checkpoint-2/model.safetensors ] && [ -f cbcmd/copies/checkpoint-6/model.safetensors ] && ok \
    || fail "the command did not copy each checkpoint: $(ls cbcmd/copies 2>&1)"
  grep -q "^begin 0" facts.txt && grep -q "^evaluate 5" facts.txt && grep -q "^end 6 finished" facts.txt \
    && grep -q '"eval_loss"' facts.txt && ok || fail "the commands' facts: $(cat facts.txt)"
  has "exited with status 3" err && grep -q oops cbcmd/callbacks.log && ok || fail "the failing command went unreported"
  run 1 run quickstart "${cb[@]}" trainer.max_steps=6 "callbacks=[{command: 'exit 4', on: [evaluate], required: true}]" \
    run.output_dir="$WORK/cbrequired"
  has "exited with status 4" err
  [ -d cbrequired/checkpoint-6 ] || [ -d cbrequired/checkpoint-5 ] && ok || fail "the required command's run kept no checkpoint"
  # told of a checkpoint saved in the background: its failure still fails the run
  run 1 run quickstart "${cb[@]}" trainer.max_steps=6 checkpoint.every_steps=2 checkpoint.async=true \
    "callbacks=[{command: 'exit 5', on: [save], required: true, background: false}]" run.output_dir="$WORK/cbasync"
  has "exited with status 5" err
  [ ! -d cbasync/checkpoint-6 ] && ok || fail "the failure at step 2's background save did not stop the run"
}

scenarios short prepare chat_templates mixture sigterm switches best_model ema callbacks bad_data
