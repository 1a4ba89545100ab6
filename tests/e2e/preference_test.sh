#!/usr/bin/env bash
# End-to-end: preference training (preference.objective) on the shipped pairs
# (recipes/data/preference_example.jsonl: text records, conversational ones, records without a prompt)
# with the dpo-llama recipe, on the CPU:
# - DPO's first step has the policy equal to its reference: loss ln 2, every reward 0, and TRL's
#   metric names in metrics.jsonl;
# - a run killed after a checkpoint and resumed ends bit for bit as the run that was not (the frozen
#   reference rebuilt from the starting weights);
# - 2 ranks of 2 pairs equal 1 rank of 2 pairs accumulating 2 steps (the loss is averaged over pairs),
#   and zero3 equals ddp (DPO and a reward model);
# - LoRA's reference is the base with the adapters off: loss ln 2 at the first step from a trained model;
# - SimPO, ORPO and DPO's other loss types train; evaluation reports TRL's metrics as eval_<name>, a
#   short last batch included;
# - preference.reference=precomputed: the starting model's log-probs computed once and cached, read by the
#   next run, resumed bit for bit with and without the cache;
# - KTO on unpaired examples (and pairs unpaired as read): loss 1/2 at the start, TRL's metrics with kl,
#   evaluation, resumed bit for bit, 2 ranks; micro-batches of 1 and a precomputed reference refused;
# - a reward model (preference.objective=reward) starts from a language model's body, reports TRL's
#   accuracy, margin and mean_reward, resumes bit for bit and exports as LlamaForSequenceClassification;
#   with LoRA too (a SEQ_CLS adapter, exported merged);
# - `hftrain plan` counts the reference copy; bad records and refused layouts exit 2 naming why.
# Usage: preference_test.sh path/to/hftrain [SCENARIO...] | --list   (tests/e2e/harness.sh)
source "$(dirname "${BASH_SOURCE[0]}")/harness.sh" "$@"

PAIRS="$SRC/recipes/data/preference_example.jsonl"
common=(data.train="[$PAIRS]" trainer.device=cpu trainer.eval_every=0 trainer.log_every=1 data.validation_fraction=0
        checkpoint.every_steps=0)
metric() { check_py metric "$WORK/$1/metrics.jsonl" "$2" "$3"; }
near() {  # near A B TOL: |A - B| <= TOL
  "$PY" -c "import sys; a, b, t = map(float, sys.argv[1:]); sys.exit(0 if abs(a - b) <= t else 1)" "$1" "$2" "$3"
}
dpo_run() { run 0 run "$SRC/recipes/dpo-llama.yaml" "${common[@]}" "$@"; }

# --- the first step: policy = reference
start() {
  dpo_run trainer.max_steps=2 run.output_dir="$WORK/start" && {
    near "$(metric start 1 loss)" 0.6931471805599453 1e-6 && ok || fail "start: step 1's loss is not ln 2"
    for key in rewards/chosen rewards/rejected rewards/margins rewards/accuracies; do
      [ "$(metric start 1 "$key")" = 0.0 ] && ok || fail "start: step 1's $key is not 0"
    done
    for key in logps/chosen logps/rejected; do
      [ -n "$(metric start 2 "$key")" ] && ok || fail "start: no $key in step 2's record"
    done
    has "DPO against a frozen copy of the starting weights" err
  }
}

# --- resume: killed after step 4's checkpoint, resumed, the same as a run through
resume() {
  once through dpo_run trainer.max_steps=8 checkpoint.every_steps=4 run.output_dir="$WORK/through"
  cp -r "$WORK/through" "$WORK/resumed" && rm -rf "$WORK/resumed/checkpoint-8" "$WORK/resumed/final"
  run 0 resume "$WORK/resumed/checkpoint-4" && {
    [ "$(metric resumed 8 loss)" = "$(metric through 8 loss)" ] && ok || fail "resume: step 8's loss differs"
    [ "$(metric resumed 8 rewards/margins)" = "$(metric through 8 rewards/margins)" ] && ok \
      || fail "resume: step 8's margins differ"
  }
}

# --- data parallelism: 2 ranks x 2 pairs = 1 rank x 2 pairs x 2 accumulated
ddp() {
  dpo_run trainer.max_steps=4 trainer.micro_batch_size=2 trainer.grad_accum_steps=2 data.shuffle=false \
    run.output_dir="$WORK/accum" &&
    dpo_run trainer.max_steps=4 trainer.micro_batch_size=2 trainer.grad_accum_steps=1 data.shuffle=false \
      run.output_dir="$WORK/ranks" --nproc-per-node 2 && {
      near "$(metric ranks 4 loss)" "$(metric accum 4 loss)" 1e-5 && ok \
        || fail "ddp: step 4's loss $(metric ranks 4 loss) on 2 ranks, $(metric accum 4 loss) accumulating"
      near "$(metric ranks 4 rewards/margins)" "$(metric accum 4 rewards/margins)" 1e-5 && ok \
        || fail "ddp: step 4's margins differ"
    }
  # The parameter-sharding strategies train the same, DPO and a reward model alike.
  for o in dpo reward; do
    for s in ddp zero3; do
      dpo_run trainer.max_steps=3 trainer.micro_batch_size=2 data.shuffle=false preference.objective=$o \
        distributed.strategy=$s run.output_dir="$WORK/$o-$s" --nproc-per-node 2
    done
    near "$(metric $o-zero3 3 loss)" "$(metric $o-ddp 3 loss)" 1e-5 && ok \
      || fail "ddp: $o's step 3 loss $(metric $o-zero3 3 loss) under zero3, $(metric $o-ddp 3 loss) under ddp"
  done
}

# --- LoRA: the reference is the trained base with the adapters off (no copy)
lora() {
  once base dpo_run trainer.max_steps=6 run.output_dir="$WORK/base"
  dpo_run trainer.max_steps=2 model.from="$WORK/base/final" peft.method=lora "peft.lora.target_modules=[q_proj,v_proj]" \
    run.output_dir="$WORK/lora" && {
    has "DPO against the base model (the adapters off)" err
    near "$(metric lora 1 loss)" 0.6931471805599453 1e-6 && ok || fail "lora: step 1's loss is not ln 2"
  }
}

# --- the other objectives and loss types
objectives() {
  for o in simpo orpo; do
    dpo_run trainer.max_steps=3 preference.objective=$o run.output_dir="$WORK/$o" && {
      [ -n "$(metric $o 3 rewards/margins)" ] && ok || fail "$o: no rewards/margins"
    }
  done
  [ -n "$(metric orpo 3 nll_loss)" ] && ok || fail "orpo: no nll_loss"
  for t in hinge ipo robust; do
    dpo_run trainer.max_steps=2 preference.loss_type=$t preference.label_smoothing=0.1 run.output_dir="$WORK/$t"
  done
  near "$(metric hinge 1 loss)" 1 1e-6 && ok || fail "hinge: step 1's loss is not 1"
  near "$(metric ipo 1 loss)" 25 1e-4 && ok || fail "ipo: step 1's loss is not (1 / (2 beta))^2 = 25"
}

# --- evaluation: TRL's metrics as eval_<name>; 8 held-out pairs in batches of 3 (the last one short)
evaluation() {
  for o in dpo orpo; do
    dpo_run trainer.max_steps=2 trainer.eval_every=2 trainer.eval_batches=null trainer.micro_batch_size=3 \
      data.validation_fraction=0.125 preference.objective=$o run.output_dir="$WORK/eval-$o" && {
      for key in eval_loss eval_rewards/margins eval_rewards/accuracies eval_logps/chosen; do
        [ -n "$(metric eval-$o 2 "$key")" ] && ok || fail "evaluation ($o): no $key in step 2's records"
      done
    }
  done
  [ -n "$(metric eval-orpo 2 eval_nll_loss)" ] && ok || fail "evaluation (orpo): no eval_nll_loss"
}

# --- precomputed: the reference's log-probs computed before training and cached; a second run reads
# them; a resume is bit for bit, with the cache and without it
precomputed() {
  local p=(preference.reference=precomputed data.cache_dir="$WORK/cache")
  once pre-through dpo_run "${p[@]}" trainer.max_steps=8 checkpoint.every_steps=4 run.output_dir="$WORK/pre-through"
  has "reference's log-probs of" err
  near "$(metric pre-through 1 loss)" 0.6931471805599453 1e-6 && ok || fail "precomputed: step 1's loss is not ln 2"
  ls "$WORK"/cache/reference-logps-*.safetensors >/dev/null 2>&1 && ok || fail "precomputed: no cache file"
  for cache in kept removed; do
    rm -rf "$WORK/pre-$cache" && cp -r "$WORK/pre-through" "$WORK/pre-$cache"
    rm -rf "$WORK/pre-$cache/checkpoint-8" "$WORK/pre-$cache/final"
    [ $cache = removed ] && rm -rf "$WORK/cache"
    run 0 resume "$WORK/pre-$cache/checkpoint-4" && {
      [ $cache = kept ] && has "pairs read from" err
      [ $cache = removed ] && has "computed by the starting model" err
      [ "$(metric pre-$cache 8 loss)" = "$(metric pre-through 8 loss)" ] && ok \
        || fail "precomputed: resumed ($cache cache) step 8's loss differs"
    }
  done
  run 0 plan "$SRC/recipes/dpo-llama.yaml" --nproc 1 "${p[@]}" && has "computed before training" out
}

# --- kto: unpaired examples (the shipped pairs unpaired as they are read, and an unpaired file): the
# first step's loss 1/2 (policy = reference, KL point 0), TRL's names with kl, evaluation, a resume bit
# for bit, 2 ranks averaging the KL point, LoRA; micro-batches of 1 and a precomputed reference refused
kto() {
  local k=(preference.objective=kto trainer.micro_batch_size=4)
  once kto-through dpo_run "${k[@]}" trainer.max_steps=6 checkpoint.every_steps=3 trainer.eval_every=3 data.shuffle=false \
    trainer.eval_batches=null data.validation_fraction=0.25 run.output_dir="$WORK/kto-through"
  near "$(metric kto-through 1 loss)" 0.5 1e-6 && ok || fail "kto: step 1's loss is not 1/2"
  [ "$(metric kto-through 1 kl)" = 0.0 ] && ok || fail "kto: step 1's kl is not 0"
  for key in rewards/chosen rewards/rejected rewards/margins logps/chosen logps/rejected kl; do
    [ -n "$(metric kto-through 6 "$key")" ] && ok || fail "kto: no $key in step 6's record"
  done
  [ -n "$(metric kto-through 6 eval_kl)" ] && ok || fail "kto: no eval_kl"
  has "KTO against a frozen copy of the starting weights" err
  rm -rf "$WORK/kto-resumed" && cp -r "$WORK/kto-through" "$WORK/kto-resumed"
  rm -rf "$WORK/kto-resumed/checkpoint-6" "$WORK/kto-resumed/final"
  run 0 resume "$WORK/kto-resumed/checkpoint-3" && {
    [ "$(metric kto-resumed 6 loss)" = "$(metric kto-through 6 loss)" ] && ok || fail "kto: resumed step 6's loss differs"
  }
  printf '%s\n' '{"prompt": "Q: sky?", "completion": " blue", "label": true}' \
    '{"prompt": "Q: sky?", "completion": " green", "label": false}' \
    '{"prompt": "Q: sea?", "completion": " wet", "label": true}' '{"prompt": "Q: sea?", "completion": " dry", "label": false}' \
    > "$WORK/unpaired.jsonl"
  dpo_run "${k[@]}" trainer.max_steps=2 data.train="[$WORK/unpaired.jsonl]" trainer.micro_batch_size=2 \
    run.output_dir="$WORK/kto-ranks" --nproc-per-node 2 && {
    [ -n "$(metric kto-ranks 2 kl)" ] && ok || fail "kto: no kl on 2 ranks"
  }
  # LoRA: the reference is the base with the adapters off, so the first step is the policy's own again.
  once base dpo_run trainer.max_steps=6 run.output_dir="$WORK/base"
  dpo_run "${k[@]}" trainer.max_steps=2 model.from="$WORK/base/final" peft.method=lora run.output_dir="$WORK/kto-lora" && {
    has "KTO against the base model (the adapters off)" err
    near "$(metric kto-lora 1 loss)" 0.5 1e-6 && ok || fail "kto lora: step 1's loss is not 1/2"
  }
  run 2 run "$SRC/recipes/dpo-llama.yaml" "${common[@]}" preference.objective=kto trainer.micro_batch_size=1 \
    run.output_dir="$WORK/kto-one" && has "a micro-batch of 1 has no other row" err
  run 2 run "$SRC/recipes/dpo-llama.yaml" "${common[@]}" "${k[@]}" preference.reference=precomputed \
    run.output_dir="$WORK/kto-pre" && has "which a pass before training cannot know" err
  printf '%s\n' '{"prompt": "q", "completion": "a", "label": "yes"}' > "$WORK/kto-bad.jsonl"
  run 2 run "$SRC/recipes/dpo-llama.yaml" "${common[@]}" "${k[@]}" data.train="[$WORK/kto-bad.jsonl]" \
    run.output_dir="$WORK/kto-bad" && has "kto-bad.jsonl:1: field 'label' is \"yes\", not true or false" err
}

# --- reward: a reward model from a language model's body, killed and resumed bit for bit, exported as
# LlamaForSequenceClassification, in full and with LoRA; it does not generate; bad margins are refused
reward() {
  once base dpo_run trainer.max_steps=6 run.output_dir="$WORK/base"
  local r=(model.from="$WORK/base/final" preference.objective=reward trainer.max_steps=6 trainer.eval_every=6
           data.validation_fraction=0.25 trainer.eval_batches=null)
  dpo_run "${r[@]}" checkpoint.every_steps=3 run.export_hf=true run.output_dir="$WORK/reward" && {
    has "the reward model's score head starts from N(0" err
    for key in accuracy margin mean_reward; do
      [ -n "$(metric reward 1 "$key")" ] && ok || fail "reward: no $key in step 1's record"
      [ -n "$(metric reward 6 "eval_$key")" ] && ok || fail "reward: no eval_$key in step 6's records"
    done
    grep -q '"LlamaForSequenceClassification"' "$WORK/reward/final-hf/config.json" && ok \
      || fail "reward: the export is not LlamaForSequenceClassification"
    grep -q '"score.weight"' "$WORK/reward/final-hf/model.safetensors" && ok || fail "reward: no score.weight exported"
  }
  cp -r "$WORK/reward" "$WORK/reward-resumed" && rm -rf "$WORK/reward-resumed/checkpoint-6" "$WORK/reward-resumed/final"
  run 0 resume "$WORK/reward-resumed/checkpoint-3" && {
    [ "$(metric reward-resumed 6 loss)" = "$(metric reward 6 loss)" ] && ok || fail "reward: resumed step 6's loss differs"
    [ "$(metric reward-resumed 6 margin)" = "$(metric reward 6 margin)" ] && ok || fail "reward: resumed margins differ"
  }
  # QLoRA: the base's linear layers quantized, the score (the output layer) not.
  dpo_run "${r[@]}" trainer.max_steps=2 peft.method=lora peft.quantize_base=nf4 run.output_dir="$WORK/reward-qlora" && {
    has "stored as nf4" err
    [ -n "$(metric reward-qlora 2 accuracy)" ] && ok || fail "reward qlora: no accuracy at step 2"
  }
  run 2 generate "$WORK/reward/final" --prompt "Hi" && has "is a reward model" err
  # LoRA: peft's SEQ_CLS adapter, the score trained in full; resumed bit for bit, exported merged.
  dpo_run "${r[@]}" peft.method=lora checkpoint.every_steps=3 run.export_hf=true run.output_dir="$WORK/reward-lora" && {
    grep -q '"SEQ_CLS"' "$WORK/reward-lora/final/adapter_config.json" && ok || fail "reward lora: not a SEQ_CLS adapter"
    grep -q '"score"' "$WORK/reward-lora/final/adapter_config.json" && ok || fail "reward lora: the score is not saved"
    grep -q '"LlamaForSequenceClassification"' "$WORK/reward-lora/final-hf/config.json" && ok \
      || fail "reward lora: the merged export is not LlamaForSequenceClassification"
  }
  cp -r "$WORK/reward-lora" "$WORK/reward-lora-resumed"
  rm -rf "$WORK/reward-lora-resumed/checkpoint-6" "$WORK/reward-lora-resumed/final" "$WORK/reward-lora-resumed/final-hf"
  run 0 resume "$WORK/reward-lora-resumed/checkpoint-3" && {
    [ "$(metric reward-lora-resumed 6 loss)" = "$(metric reward-lora 6 loss)" ] && ok \
      || fail "reward lora: resumed step 6's loss differs"
  }
  printf '%s\n' '{"prompt": "q", "chosen": "a", "rejected": "b", "margin": "big"}' > "$WORK/margin.jsonl"
  run 2 run "$SRC/recipes/dpo-llama.yaml" "${common[@]}" preference.objective=reward data.train="[$WORK/margin.jsonl]" \
    run.output_dir="$WORK/reward-margin" && has "margin.jsonl:1: field 'margin' is \"big\", not a finite number" err
}

# --- plan: the reference copy's memory, and the 2B rows of a micro-batch
plan() {
  run 0 plan "$SRC/recipes/dpo-llama.yaml" --nproc 2 && {
    has "the reference, a frozen copy of the starting weights, adds" out
    has "not sharded" out
    has "(trainer.micro_batch_size=4 pairs: 8 rows)" out
  }
  run 0 plan "$SRC/recipes/dpo-llama.yaml" --nproc 1 preference.objective=simpo && has "no reference copy" out
}

# --- bad input: named, exit 2
bad_input() {
  printf '%s\n' '{"prompt": "q", "chosen": "a", "rejected": "b"}' '{"prompt": "q", "chosen": "a", "rejectd": "b"}' \
    > "$WORK/bad.jsonl"
  run 2 run "$SRC/recipes/dpo-llama.yaml" "${common[@]}" data.train="[$WORK/bad.jsonl]" run.output_dir="$WORK/bad2" \
    && has "bad.jsonl:2: the record has no field 'rejected'" err && has "did you mean 'rejectd'" err
  printf '%s\n' '{"chosen": "same", "rejected": "same"}' > "$WORK/same.jsonl"
  run 2 run "$SRC/recipes/dpo-llama.yaml" "${common[@]}" data.train="[$WORK/same.jsonl]" run.output_dir="$WORK/same" \
    && has "same.jsonl:1: chosen and rejected are the same" err
  run 2 run "$SRC/recipes/dpo-llama.yaml" "${common[@]}" data.chat_template=hftrain run.output_dir="$WORK/notemplate" \
    && has "a conversational pair needs the model's chat template" err
  run 2 run "$SRC/recipes/dpo-llama.yaml" "${common[@]}" preference.reference=adapters_off run.output_dir="$WORK/off" \
    && has "no adapters to turn off" err
  run 2 run "$SRC/recipes/dpo-llama.yaml" "${common[@]}" distributed.tensor_parallel=2 run.output_dir="$WORK/tp" \
    && has "tensor and pipeline parallelism" err
  once base dpo_run trainer.max_steps=6 run.output_dir="$WORK/base"
  run 2 run "$SRC/recipes/dpo-llama.yaml" "${common[@]}" model.from="$WORK/base/final" peft.method=lora peft.from="$WORK" \
    distributed.strategy=zero3 run.output_dir="$WORK/z3" && has "swaps the adapter's starting values in" err
}

# --- activation checkpointing recomputes the policy's blocks: DPO's losses and rewards as without it;
# bf16 autocast starts at ln 2 (policy = reference) and trains to finite losses
memory_precision() {
  dpo_run trainer.max_steps=4 run.output_dir="$WORK/plainck" || return
  dpo_run trainer.max_steps=4 model.activation_checkpointing=true run.output_dir="$WORK/ckpt" || return
  check_py close "$WORK/plainck/metrics.jsonl" "$WORK/ckpt/metrics.jsonl" 1 4 1e-6 2>&1 | tail -1
  check_py close "$WORK/plainck/metrics.jsonl" "$WORK/ckpt/metrics.jsonl" 1 4 1e-6 >/dev/null 2>&1 && ok \
    || fail "DPO with activation checkpointing differs from without"
  dpo_run trainer.max_steps=4 trainer.precision=bf16 model.activation_checkpointing=true run.output_dir="$WORK/bf16" \
    || return
  near "$(metric bf16 1 loss)" 0.6931471805599453 1e-6 && ok || fail "bf16: step 1's loss is not ln 2"
  check_py finite "$WORK/bf16/final/model.safetensors" && ok || fail "bf16: the trained weights are not finite"
}

scenarios start resume ddp lora objectives evaluation precomputed kto reward plan memory_precision bad_input
