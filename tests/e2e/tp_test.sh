#!/usr/bin/env bash
# End-to-end: tensor parallelism on the CPU (MPI), through hftrain's own launcher. A tensor-parallel
# run trains the model of one rank (fp32, dropout off): losses and final weights within 1e-5 for
# GPT-2 (with a vocabulary that 2 does not divide, tied embeddings), Llama with grouped-query
# attention (untied head), with and without sequence parallelism, a mixture of experts, and a BERT classifier, and for 2 x 2 ranks (data
# parallel x tensor parallel; ddp, zero1, zero2, zero2 with cpu_offload, zero3) against one rank
# accumulating 2 micro-batches. The saved model is whole; each rank saves its optimizer pieces
# (tensor_parallel.json says where they lie), and a checkpoint resumes on one rank and at other
# layouts with the same next losses. With dropout the group's random streams train as one rank does, replay under
# activation checkpointing and resume exactly. Layouts that cannot run are refused before any work with exit 2.
# Usage: tp_test.sh path/to/hftrain [SCENARIO...] | --list   (tests/e2e/harness.sh)
source "$(dirname "${BASH_SOURCE[0]}")/harness.sh" "$@"
source "$SRC/tests/e2e/compare.sh"

cookie_corpus
common=(data.train="$WORK/corpus/*" "data.separator='%'" data.validation_fraction=0.1 model.n_layer=2
        model.max_seq_len=64 data.seq_len=32 trainer.micro_batch_size=4 trainer.max_grad_norm=0.5 optimizer.lr=0.003
        optimizer.weight_decay=0.1 scheduler.name=cosine scheduler.warmup_steps=3 trainer.log_every=1
        trainer.max_steps=8 checkpoint.at_end=false trainer.device=cpu trainer.eval_every=4)
# GPT-2: 261 vocabulary rows split 131 + 130, tied embeddings, learned positions, biases everywhere.
gpt2=("${common[@]}" model.arch=gpt2 model.n_head=2 model.d_model=32 model.vocab_size=261)
# Llama: 4 query heads over 2 key/value heads (each rank: 2 over 1), an untied head, SwiGLU.
llama=("${common[@]}" model.arch=llama model.n_head=4 model.n_kv_head=2 model.d_model=32 model.d_ff=64
       model.vocab_size=260 model.tie_embeddings=false)
bert=(model.arch=bert model.n_layer=2 model.n_head=2 model.d_model=32 model.max_seq_len=64 data.seq_len=64
      data.train="$SRC/recipes/data/reviews_example.csv" data.validation_fraction=0.2 tokenizer.type=hf
      tokenizer.path="$SRC/tests/fixtures/data/hf_bert_tokenizer.json" model.vocab_size=900 trainer.max_steps=8
      trainer.eval_every=8 trainer.log_every=1 optimizer.lr=0.003 scheduler.warmup_steps=2 "data.exclude=[]"
      "data.separator=''" trainer.micro_batch_size=4 trainer.device=cpu checkpoint.at_end=false)

# MODEL-ref: one rank, the reference of MODEL (gpt2 or llama)
reference() {
  local -n args=$1
  once "$1-ref" run 0 run quickstart "${args[@]}" run.output_dir="$WORK/$1-ref"
}
# MODEL-tp2-spSP: MODEL at tp=2, sequence parallelism SP (true or false)
tp2() {
  local -n args=$1
  run 0 run quickstart "${args[@]}" distributed.tensor_parallel=2 distributed.sequence_parallel=$2 \
    run.output_dir="$WORK/$1-tp2-sp$2" --nproc-per-node 2
}
# llama-dp2-tp2-S: llama on 2 data-parallel x 2 tensor-parallel ranks under S (ddp, zero1, zero2,
# zero2-offload: with cpu_offload, zero3-ckpt: with activation checkpointing), a checkpoint at 4
dp2_tp2() {
  local s=$1
  local strategy=(distributed.strategy=${s%-*})
  [ $s = zero2-offload ] && strategy+=(distributed.cpu_offload=true)
  [ $s = zero3-ckpt ] && strategy+=(model.activation_checkpointing=true)
  run 0 run quickstart "${llama[@]}" "${strategy[@]}" distributed.tensor_parallel=2 checkpoint.every_steps=4 \
    run.output_dir="$WORK/llama-dp2-tp2-$s" --nproc-per-node 4
}

# --- GPT-2 and Llama at tp=2, with and without sequence parallelism, against one rank
same_model() {  # same_model MODEL
  local m=$1 dir
  reference $m || return
  for sp in false true; do
    dir=$m-tp2-sp$sp
    tp2 $m $sp || continue
    has "mesh: 2 ranks = data parallel 1 x tensor parallel 2" err
    check "$m, tp=2 (sequence parallel $sp) vs 1 rank: losses" close $m-ref $dir 1 8 1e-5
    check "$m, tp=2 (sequence parallel $sp) vs 1 rank: weights" same_weights $m-ref $dir 1e-5
  done
}
gpt2() { same_model gpt2; }
llama() { same_model llama; }

# --- a mixture of experts (4 experts, 2 per token, a shared expert, the load-balancing loss; every
# rank its part of each expert's hidden units, the router whole): tp=2 equals 1 rank, and with
# sequence parallelism
moe() {
  local moe=("${llama[@]}" model.n_experts=4 model.experts_per_token=2 model.expert_d_ff=32 model.shared_expert_d_ff=16
             model.router_aux_loss_coef=0.02)
  if run 0 run quickstart "${moe[@]}" run.output_dir="$WORK/moe-ref"; then
    for sp in false true; do
      run 0 run quickstart "${moe[@]}" distributed.tensor_parallel=2 distributed.sequence_parallel=$sp \
        run.output_dir="$WORK/moe-tp2-sp$sp" --nproc-per-node 2 || continue
      check "mixture of experts, tp=2 (sequence parallel $sp) vs 1 rank: losses" close moe-ref moe-tp2-sp$sp 1 8 1e-5
      check "mixture of experts, tp=2 (sequence parallel $sp) vs 1 rank: weights" same_weights moe-ref moe-tp2-sp$sp 1e-5
    done
    # checkpointed blocks hand the router's statistics out of the recomputation: the tokens counted
    # are the whole sequence's, though each rank holds a slice of it
    run 0 run quickstart "${moe[@]}" distributed.tensor_parallel=2 distributed.sequence_parallel=true \
      model.activation_checkpointing=true run.output_dir="$WORK/moe-tp2-ckpt" --nproc-per-node 2 \
      && check "mixture of experts, tp=2 with sequence parallelism and activation checkpointing vs 1 rank: losses" \
        close moe-ref moe-tp2-ckpt 1 8 1e-5
  fi
}

# --- hybrid on 2 "nodes" of 4 ranks (two launchers): tp=2 inside each node, zero3 over the node's 2
# data-parallel ranks of each tensor-parallel rank, replicated across the nodes; against one rank
# accumulating the 4 data-parallel ranks' micro-batches
hybrid() {
  local nodes hybrid node1
  run 0 run quickstart "${llama[@]}" trainer.grad_accum_steps=4 run.output_dir="$WORK/llama-accum4"
  nodes=(--nproc-per-node 4 --nnodes 2 --master-addr 127.0.0.1 --master-port "$(free_port)")
  hybrid=("${llama[@]}" distributed.strategy=hybrid distributed.tensor_parallel=2 run.output_dir="$WORK/llama-hybrid")
  "$HFTRAIN" run quickstart "${hybrid[@]}" "${nodes[@]}" --node-rank 1 >"$WORK/node1.out" 2>"$WORK/node1.err" &
  node1=$!
  if run 0 run quickstart "${hybrid[@]}" "${nodes[@]}" --node-rank 0; then
    has "mesh: 8 ranks = data parallel 4 x tensor parallel 2" err
    check "llama, hybrid over 2 nodes x (dp 2 x tp 2) vs 1 rank accumulating 4: losses" close llama-accum4 llama-hybrid 1 8 1e-5
    check "llama, hybrid over 2 nodes x (dp 2 x tp 2) vs 1 rank accumulating 4: weights" \
      same_weights llama-accum4 llama-hybrid 1e-5
  fi
  wait $node1 && ok || fail "hybrid: node 1 exited: $(tail -c 600 "$WORK/node1.err")"
}

# --- the memory at start and `hftrain plan`: a rank's Ψ is its pieces of the split parameters plus
# those every rank holds whole, the same figure in both; --memory lists the layouts that fit
plan() {
  once llama-tp2-spfalse tp2 llama false
  if [ -f llama-tp2-spfalse/train.log ]; then
    run 0 plan quickstart "${llama[@]}" distributed.tensor_parallel=2 --nproc 4 --memory 1GB
    has "tensor_parallel=2 (data parallel 2) strategy=zero3" out
    check_py tp-plan-psi "$out" "$WORK/llama-tp2-spfalse/train.log" && ok || fail "plan's Ψ per rank is not the run's"
    run 2 plan quickstart "${llama[@]}" distributed.tensor_parallel=2 --nproc 3 && has "does not divide --nproc 3" err
  fi
}

# --- a BERT classifier (each rank half of every layer's heads and intermediate units, its rows of the
# vocabulary; the pooler and classifier whole): tp=2 equals 1 rank, alone and under dp=2 x tp=2
bert() {
  run 0 run quickstart "${bert[@]}" run.output_dir="$WORK/bert-ref"
  run 0 run quickstart "${bert[@]}" trainer.grad_accum_steps=2 run.output_dir="$WORK/bert-accum2"
  if run 0 run quickstart "${bert[@]}" distributed.tensor_parallel=2 run.output_dir="$WORK/bert-tp2" --nproc-per-node 2; then
    check "bert classifier, tp=2 vs 1 rank: losses" close bert-ref bert-tp2 1 8 1e-5
    check "bert classifier, tp=2 vs 1 rank: weights" same_weights bert-ref bert-tp2 1e-5
  fi
  if run 0 run quickstart "${bert[@]}" distributed.tensor_parallel=2 distributed.strategy=zero2 \
    run.output_dir="$WORK/bert-dp2-tp2" --nproc-per-node 4; then
    check "bert classifier, dp=2 x tp=2 (zero2) vs 1 rank accumulating 2: losses" close bert-accum2 bert-dp2-tp2 1 8 1e-5
    check "bert classifier, dp=2 x tp=2 (zero2) vs 1 rank accumulating 2: weights" \
      same_weights bert-accum2 bert-dp2-tp2 1e-5
  fi
}

# --- 2 data-parallel x 2 tensor-parallel ranks (ddp, zero1, zero2, zero2 with cpu_offload, and zero3
# with activation checkpointing over each data-parallel group) against one rank that accumulates
# the two data-parallel ranks' micro-batches
dp2_tp2_strategies() {
  run 0 run quickstart "${llama[@]}" trainer.grad_accum_steps=2 run.output_dir="$WORK/llama-accum2"
  for s in ddp zero1 zero2 zero2-offload zero3-ckpt; do
    dp2_tp2 $s || continue
    has "mesh: 4 ranks = data parallel 2 x tensor parallel 2" err
    check "llama, dp=2 x tp=2 ($s) vs 1 rank accumulating 2: losses" close llama-accum2 llama-dp2-tp2-$s 1 8 1e-5
    check "llama, dp=2 x tp=2 ($s) vs 1 rank accumulating 2: weights" same_weights llama-accum2 llama-dp2-tp2-$s 1e-5
  done
}
# --- zero2's checkpoint of dp=2 x tp=2 (each rank its pieces) resumed on 1 rank, at dp=2 under
# zero3, at tp=2 under ddp and at dp2 x tp2 under zero3, and zero3's on 1 rank: the same next losses
dp2_tp2_resume() {
  once llama-dp2-tp2-zero2 dp2_tp2 zero2
  if [ -d llama-dp2-tp2-zero2/checkpoint-4 ]; then
    run 0 verify "$WORK/llama-dp2-tp2-zero2/checkpoint-4"
    [ -f llama-dp2-tp2-zero2/checkpoint-4/tensor_parallel.json ] && ok || fail "no tensor_parallel.json"
    n=$(ls llama-dp2-tp2-zero2/checkpoint-4/optimizer/shard-*.safetensors | wc -l)
    [ "$n" = 4 ] && ok || fail "dp2 x tp2 zero2: $n optimizer shard files, expected 4 (each rank its pieces)"
    for to in one z3 tp2 tp2z3; do
      mkdir "llama-from-$to" && cp -r llama-dp2-tp2-zero2/checkpoint-4 "llama-from-$to/"
    done
    run 0 resume "$WORK/llama-from-one/checkpoint-4" distributed.tensor_parallel=1 distributed.strategy=ddp \
      trainer.grad_accum_steps=2 --force \
      && check "llama: dp2 x tp2 zero2's checkpoint resumed on 1 rank: losses 5-8" \
        close llama-dp2-tp2-zero2 llama-from-one 5 8 1e-6
    run 0 resume "$WORK/llama-from-z3/checkpoint-4" distributed.tensor_parallel=1 distributed.strategy=zero3 --force \
      --nproc-per-node 2 \
      && check "llama: dp2 x tp2 zero2's checkpoint resumed at dp=2 under zero3: losses 5-8" \
        close llama-dp2-tp2-zero2 llama-from-z3 5 8 1e-6
    run 0 resume "$WORK/llama-from-tp2/checkpoint-4" distributed.strategy=ddp trainer.grad_accum_steps=2 --force \
      --nproc-per-node 2 \
      && check "llama: dp2 x tp2 zero2's checkpoint resumed at tp=2 (dp=1) under ddp: losses 5-8" \
        close llama-dp2-tp2-zero2 llama-from-tp2 5 8 1e-6
    run 0 resume "$WORK/llama-from-tp2z3/checkpoint-4" distributed.strategy=zero3 --force --nproc-per-node 4 \
      && check "llama: dp2 x tp2 zero2's checkpoint resumed at dp2 x tp2 under zero3: losses 5-8" \
        close llama-dp2-tp2-zero2 llama-from-tp2z3 5 8 1e-6
  fi
  once llama-dp2-tp2-zero3-ckpt dp2_tp2 zero3-ckpt
  if [ -d llama-dp2-tp2-zero3-ckpt/checkpoint-4 ]; then
    mkdir llama-z3-from-one && cp -r llama-dp2-tp2-zero3-ckpt/checkpoint-4 llama-z3-from-one/
    run 0 resume "$WORK/llama-z3-from-one/checkpoint-4" distributed.tensor_parallel=1 distributed.strategy=ddp \
      model.activation_checkpointing=false trainer.grad_accum_steps=2 --force \
      && check "llama: dp2 x tp2 zero3's checkpoint resumed on 1 rank: losses 5-8" \
        close llama-dp2-tp2-zero3-ckpt llama-z3-from-one 5 8 1e-6
  fi
}

# --- a tensor-parallel checkpoint (whole weights, whole optimizer state) resumed on 1 rank and at
# tp=2 with sequence parallelism: the same next losses
tp2_checkpoint() {
  if run 0 run quickstart "${gpt2[@]}" distributed.tensor_parallel=2 checkpoint.every_steps=4 \
    run.output_dir="$WORK/gpt2-ckpt" --nproc-per-node 2; then
    run 0 verify "$WORK/gpt2-ckpt/checkpoint-4"
    for to in one tp2sp; do
      mkdir "gpt2-from-$to" && cp -r gpt2-ckpt/checkpoint-4 "gpt2-from-$to/"
    done
    run 0 resume "$WORK/gpt2-from-one/checkpoint-4" distributed.tensor_parallel=1 --force \
      && check "gpt2: tp=2's checkpoint resumed on 1 rank: losses 5-8" close gpt2-ckpt gpt2-from-one 5 8 1e-5
    run 0 resume "$WORK/gpt2-from-tp2sp/checkpoint-4" distributed.sequence_parallel=true --force --nproc-per-node 2 \
      && check "gpt2: tp=2's checkpoint resumed at tp=2 with sequence parallelism: losses 5-8" \
        close gpt2-ckpt gpt2-from-tp2sp 5 8 1e-5
  fi
}

# --- dropout (0.1): the ranks of a group draw the same numbers where they compute the same values
# and their own where they compute their own part (tensor_parallel.h). Activation checkpointing
# replays both streams (the same losses as without it) and a resume continues both exactly (the
# streams themselves: tests/model/test_tensor_parallel.cpp). Against one rank with dropout the
# losses differ (other numbers) but stay within 2% (loose: a statistical check of 8 steps); one
# rank without dropout (gpt2-ref) shows the scale.
dropout() {
  local drop=("${gpt2[@]}" model.dropout=0.1 trainer.max_steps=8)
  reference gpt2
  run 0 run quickstart "${drop[@]}" run.output_dir="$WORK/drop-ref"
  run 0 run quickstart "${drop[@]}" checkpoint.every_steps=4 run.output_dir="$WORK/drop-ref-ckpt"
  for sp in false true; do
    run 0 run quickstart "${drop[@]}" distributed.tensor_parallel=2 distributed.sequence_parallel=$sp \
      checkpoint.every_steps=4 run.output_dir="$WORK/drop-sp$sp" --nproc-per-node 2 || continue
    run 0 run quickstart "${drop[@]}" distributed.tensor_parallel=2 distributed.sequence_parallel=$sp \
      model.activation_checkpointing=true run.output_dir="$WORK/drop-ckpt-sp$sp" --nproc-per-node 2 \
      && check "dropout, tp=2 (sequence parallel $sp): activation checkpointing replays it" \
        close drop-sp$sp drop-ckpt-sp$sp 1 8 1e-6
    mkdir "drop-resumed-sp$sp" && cp -r "drop-sp$sp/checkpoint-4" "drop-resumed-sp$sp/"
    run 0 resume "$WORK/drop-resumed-sp$sp/checkpoint-4" --nproc-per-node 2 \
      && check "dropout, tp=2 (sequence parallel $sp): resumed at step 4, losses 5-8" \
        close drop-sp$sp drop-resumed-sp$sp 5 8 1e-6
    # saved on one rank, resumed at tp=2: the group's default generators agree again (no drift
    # between the ranks' copies of the norms when the next checkpoint checks them)
    mkdir "drop-onto-tp-sp$sp" && cp -r drop-ref-ckpt/checkpoint-4 "drop-onto-tp-sp$sp/"
    run 0 resume "$WORK/drop-onto-tp-sp$sp/checkpoint-4" distributed.tensor_parallel=2 distributed.sequence_parallel=$sp \
      checkpoint.at_end=true --force --nproc-per-node 2 \
      && { [[ "$err" != *"hold copies of the parameters they share that differ"* ]] && ok \
        || fail "dropout resumed at tp=2 (sequence parallel $sp): the ranks drifted apart"; }
    check_py dropout-follows "$WORK/drop-ref/metrics.jsonl" "$WORK/drop-sp$sp/metrics.jsonl" "$WORK/gpt2-ref/metrics.jsonl" \
      && ok || fail "dropout, tp=2 (sequence parallel $sp): its losses do not follow one rank's with dropout"
  done
}

# --- layouts that cannot run: exit 2 before any work, naming the rule and a fix
refused() {  # refused WHAT TEXT ARGS...: exit 2, TEXT in stderr, no checkpoint written
  local what=$1 text=$2
  shift 2
  run 2 run quickstart "${gpt2[@]}" run.output_dir="$WORK/refused" "$@" && has "$text" err
  [ -z "$(ls -d "$WORK"/refused/checkpoint-* 2>/dev/null)" ] && ok || fail "$what: a refused run wrote a checkpoint"
}
refused_layouts() {
  local nodes node1
  refused "world size" "does not divide the world of 3 ranks" distributed.tensor_parallel=2 --nproc-per-node 3
  refused "heads" "model.n_head=2 does not divide by distributed.tensor_parallel=3" distributed.tensor_parallel=3 \
    --nproc-per-node 3
  refused "kv heads" "model.n_kv_head=2 does not divide by distributed.tensor_parallel=4" model.arch=llama \
    model.n_head=8 model.n_kv_head=2 model.d_ff=64 distributed.tensor_parallel=4 --nproc-per-node 4
  refused "adafactor" "optimizer.name=adafactor factors whole weight matrices" optimizer.name=adafactor \
    distributed.tensor_parallel=2 --nproc-per-node 2
  refused "sequence parallel alone" "distributed.sequence_parallel needs distributed.tensor_parallel > 1" \
    distributed.sequence_parallel=true
  refused "sequence parallel on an encoder" "BERT encoders split their layers only" "${bert[@]}" \
    distributed.tensor_parallel=2 distributed.sequence_parallel=true --nproc-per-node 2
  refused "modernbert" "ModernBERT encoders are not split yet" "${bert[@]}" model.encoder=modernbert \
    distributed.tensor_parallel=2 --nproc-per-node 2
  # hybrid shards inside a node: a tensor-parallel group across two nodes (2 nodes of 3 ranks, tp=2)
  nodes=(--nproc-per-node 3 --nnodes 2 --master-addr 127.0.0.1 --master-port "$(free_port)")
  "$HFTRAIN" run quickstart "${gpt2[@]}" distributed.strategy=hybrid distributed.tensor_parallel=2 \
    run.output_dir="$WORK/refused" "${nodes[@]}" --node-rank 1 >"$WORK/node1.out" 2>"$WORK/node1.err" &
  node1=$!
  refused "hybrid with a group across nodes" "needs each node's 3 ranks to hold whole tensor-parallel groups" \
    distributed.strategy=hybrid distributed.tensor_parallel=2 "${nodes[@]}" --node-rank 0
  wait $node1
  [ $? = 2 ] && ok || fail "hybrid across nodes: node 1 did not exit 2: $(tail -c 300 "$WORK/node1.err")"
}

scenarios gpt2 llama moe hybrid plan bert dp2_tp2_strategies dp2_tp2_resume tp2_checkpoint dropout refused_layouts
