#!/usr/bin/env bash
# End-to-end: pipeline parallelism on the CPU (MPI), through hftrain's own launcher. A pipelined run
# trains the model of one rank accumulating the same micro-batches (fp32, dropout off): losses,
# gradient norms and final weights within 1e-5 for GPT-2 (a tied embedding: the first stage owns
# it, the last holds a copy) and Llama (untied head), 2 stages under gpipe and 1f1b, 4 stages, with
# activation checkpointing, explicit boundaries, interleaved over 2 virtual stages (both schedules,
# with checkpointing; under zero3 and ddp at dp=2; resumed on one rank), 2 stages x 2 tensor-parallel ranks (with sequence
# parallelism), 2 stages x 2 data-parallel ranks under ddp/zero1/zero2 (with cpu_offload)/zero3 (the
# tied embedding gathered from its shards for the last stage's copy), 3 stages x 2 under zero3 and
# hybrid over 4 launchers of 2 ranks,
# one micro-batch a step; evaluation runs through the stages; with dropout, activation
# checkpointing and a resume repeat a pipelined run's losses exactly. A checkpoint saved at tp2 x pp2 holds the whole model and resumes at dp2 under zero3
# and on one rank with the same next losses (1e-6). Layouts that cannot run are refused before any
# work with exit 2.
# Usage: pp_test.sh path/to/hftrain [SCENARIO...] | --list   (tests/e2e/harness.sh)
source "$(dirname "${BASH_SOURCE[0]}")/harness.sh" "$@"
source "$SRC/tests/e2e/compare.sh"

cookie_corpus
common=(data.train="$WORK/corpus/*" "data.separator='%'" data.validation_fraction=0.1 model.n_layer=4
        model.max_seq_len=64 data.seq_len=32 trainer.micro_batch_size=2 trainer.grad_accum_steps=4
        trainer.max_grad_norm=0.5 optimizer.lr=0.003 optimizer.weight_decay=0.1 scheduler.name=cosine
        scheduler.warmup_steps=3 trainer.log_every=1 trainer.max_steps=8 checkpoint.at_end=false trainer.device=cpu
        trainer.eval_every=4 distributed.timeout=2m)
gpt2=("${common[@]}" model.arch=gpt2 model.n_head=2 model.d_model=32 model.vocab_size=261)
llama=("${common[@]}" model.arch=llama model.n_head=4 model.n_kv_head=2 model.d_model=32 model.d_ff=64
       model.vocab_size=260 model.tie_embeddings=false)

# same_eval A B: the evaluations (steps 4 and 8) agree within 1e-5 relative
same_eval() { check_py same-eval "$WORK/$1/metrics.jsonl" "$WORK/$2/metrics.jsonl"; }

# MODEL-ref: one rank accumulating 4 micro-batches, the reference of MODEL (gpt2 or llama)
reference() {
  local -n args=$1
  once "$1-ref" run 0 run quickstart "${args[@]}" run.output_dir="$WORK/$1-ref"
}
# MODEL-LAYOUT: MODEL pipelined as LAYOUT says: ppN (N stages), -gpipe, v2 (2 virtual stages),
# -ckpt (activation checkpointing), -bounds (explicit boundaries [0,1,4])
pipelined() {
  local -n args=$1
  local layout=$2
  local opts=(distributed.pipeline_parallel=${layout:2:1})
  [[ $layout == *gpipe* ]] && opts+=(distributed.pipeline_schedule=gpipe)
  [[ $layout == *v2* ]] && opts+=(distributed.pipeline_virtual_stages=2)
  [[ $layout == *ckpt* ]] && opts+=(model.activation_checkpointing=true)
  [[ $layout == *bounds* ]] && opts+=("distributed.pipeline_stages=[0,1,4]")
  run 0 run quickstart "${args[@]}" "${opts[@]}" run.output_dir="$WORK/$1-$layout" --nproc-per-node ${layout:2:1}
}
# MODEL-tp2-pp2: 2 stages x 2 tensor-parallel ranks (with sequence parallelism for llama), a checkpoint at 4
tp2_pp2_run() {
  local -n args=$1
  local sp=false
  [ $1 = llama ] && sp=true
  run 0 run quickstart "${args[@]}" distributed.pipeline_parallel=2 distributed.tensor_parallel=2 \
    distributed.sequence_parallel=$sp checkpoint.every_steps=4 run.output_dir="$WORK/$1-tp2-pp2" --nproc-per-node 4
}
gpt2_accum8() { once gpt2-accum8 run 0 run quickstart "${gpt2[@]}" trainer.grad_accum_steps=8 run.output_dir="$WORK/gpt2-accum8"; }
llama_accum8() {
  once llama-accum8 run 0 run quickstart "${llama[@]}" trainer.grad_accum_steps=8 run.output_dir="$WORK/llama-accum8"
}

# --- each layout against one rank: 2 stages under gpipe and 1f1b, 4 stages, checkpointing,
# explicit boundaries, interleaved over 2 virtual stages
layouts() {  # layouts MODEL
  local m=$1
  reference $m || return
  for layout in pp2-gpipe pp2-1f1b pp4-1f1b pp2-1f1b-ckpt pp2-bounds pp2v2-1f1b pp2v2-gpipe pp2v2-1f1b-ckpt; do
    pipelined $m $layout || continue
    has "x pipeline parallel ${layout:2:1}" err
    check "$m, $layout vs 1 rank accumulating 4: losses" close $m-ref $m-$layout 1 8 1e-5
    check "$m, $layout vs 1 rank: evaluation" same_eval $m-ref $m-$layout
    check "$m, $layout vs 1 rank: weights" same_weights $m-ref $m-$layout 1e-5
  done
}
gpt2_layouts() { layouts gpt2; }
llama_layouts() {
  layouts llama
  grep -q "pipeline: stage 0: blocks 0-0; stage 1: blocks 1-3" "$WORK/llama-pp2-bounds/train.log" && ok \
    || fail "the explicit boundaries were not logged as expected"
  grep -q "pipeline: stage 0: blocks 0-0, 2-2; stage 1: blocks 1-1, 3-3 (1f1b interleaved over 2 virtual stages" \
    "$WORK/llama-pp2v2-1f1b-ckpt/train.log" && ok || fail "interleaved stages' blocks not logged as expected"
}

# --- 2 stages x 2 tensor-parallel ranks (4 processes), with sequence parallelism for llama; and
# `generate` on the whole model a pipelined run saved
tp2_pp2() {
  for m in gpt2 llama; do
    reference $m
    tp2_pp2_run $m || continue
    has "mesh: 4 ranks = data parallel 1 x tensor parallel 2 x pipeline parallel 2" err
    check "$m, tp=2 x pp=2 vs 1 rank: losses" close $m-ref $m-tp2-pp2 1 8 1e-5
    check "$m, tp=2 x pp=2 vs 1 rank: weights" same_weights $m-ref $m-tp2-pp2 1e-5
  done
  if [ -d llama-tp2-pp2/final ]; then
    run 0 generate "$WORK/llama-tp2-pp2/final" --prompt "The cat" --max-new-tokens 8
    [[ "$out" == "The cat"* ]] && ok || fail "generate on tp2 x pp2's final model: $out"
  fi
}

# --- 2 stages x 2 data-parallel ranks against one rank accumulating both ranks' micro-batches
dp2_pp2() {
  local strategy
  gpt2_accum8
  for s in ddp zero1 zero2 zero2-offload zero3; do
    strategy=(distributed.strategy=${s%-*})
    [ $s = zero2-offload ] && strategy+=(distributed.cpu_offload=true)
    run 0 run quickstart "${gpt2[@]}" "${strategy[@]}" distributed.pipeline_parallel=2 \
      run.output_dir="$WORK/gpt2-dp2-pp2-$s" --nproc-per-node 4 || continue
    has "mesh: 4 ranks = data parallel 2 x tensor parallel 1 x pipeline parallel 2" err
    check "gpt2, dp=2 x pp=2 ($s) vs 1 rank accumulating 8: losses" close gpt2-accum8 gpt2-dp2-pp2-$s 1 8 1e-5
    check "gpt2, dp=2 x pp=2 ($s) vs 1 rank accumulating 8: weights" same_weights gpt2-accum8 gpt2-dp2-pp2-$s 1e-5
  done
}
# interleaved over 2 virtual stages at dp=2: zero3 (a chunk's backward reduces its units, the other
# chunk's as zeros) and ddp (the reduction armed for the last backward, the other chunk's buckets
# sent at its end); a checkpoint saved interleaved resumes on one rank
interleaved_dp2() {
  gpt2_accum8
  for s in zero3 ddp; do
    run 0 run quickstart "${gpt2[@]}" distributed.strategy=$s distributed.pipeline_parallel=2 \
      distributed.pipeline_virtual_stages=2 checkpoint.every_steps=4 run.output_dir="$WORK/gpt2-dp2-pp2v2-$s" \
      --nproc-per-node 4 || continue
    check "gpt2, dp=2 x pp=2 x 2 virtual ($s) vs 1 rank accumulating 8: losses" close gpt2-accum8 gpt2-dp2-pp2v2-$s 1 8 1e-5
    check "gpt2, dp=2 x pp=2 x 2 virtual ($s) vs 1 rank accumulating 8: weights" \
      same_weights gpt2-accum8 gpt2-dp2-pp2v2-$s 1e-5
  done
  if [ -d gpt2-dp2-pp2v2-zero3/checkpoint-4 ]; then
    mkdir gpt2-from-v2 && cp -r gpt2-dp2-pp2v2-zero3/checkpoint-4 gpt2-from-v2/
    run 0 resume "$WORK/gpt2-from-v2/checkpoint-4" distributed.strategy=ddp distributed.pipeline_parallel=1 \
      distributed.pipeline_virtual_stages=1 trainer.grad_accum_steps=8 --force \
      && check "gpt2: dp2 x pp2 x 2 virtual's checkpoint resumed on 1 rank: losses 5-8" \
        close gpt2-dp2-pp2v2-zero3 gpt2-from-v2 5 8 1e-6
  fi
}

# zero3 over 3 stages (the middle one holds neither embeddings nor head: an empty root unit)
zero3_pp3() {
  llama_accum8
  if run 0 run quickstart "${llama[@]}" distributed.strategy=zero3 distributed.pipeline_parallel=3 \
    run.output_dir="$WORK/llama-dp2-pp3-zero3" --nproc-per-node 6; then
    check "llama, dp=2 x pp=3 (zero3) vs 1 rank accumulating 8: losses" close llama-accum8 llama-dp2-pp3-zero3 1 8 1e-5
    check "llama, dp=2 x pp=3 (zero3) vs 1 rank accumulating 8: weights" \
      same_weights llama-accum8 llama-dp2-pp3-zero3 1e-5
  fi
}

# zero3 under gpipe: the last stage's root (final norm, head) gathered again for each backward after
# the first one's reduction released it
zero3_gpipe() {
  llama_accum8
  if run 0 run quickstart "${llama[@]}" distributed.strategy=zero3 distributed.pipeline_parallel=2 \
    distributed.pipeline_schedule=gpipe run.output_dir="$WORK/llama-dp2-pp2-zero3-gpipe" --nproc-per-node 4; then
    check "llama, dp=2 x pp=2 (zero3, gpipe) vs 1 rank accumulating 8: losses" \
      close llama-accum8 llama-dp2-pp2-zero3-gpipe 1 8 1e-5
  fi
}

# --- under mpirun (the launcher needs nothing beyond the world size)
under_mpirun() {
  if ! command -v mpirun >/dev/null; then
    echo "SKIP: mpirun not found; the mpirun case of this test did not run"
    return 0
  fi
  reference gpt2 || return
  "${MPIRUN[@]}" -np 2 "$HFTRAIN" run quickstart "${gpt2[@]}" distributed.pipeline_parallel=2 \
    run.output_dir="$WORK/gpt2-mpi-pp2" >"$WORK/mpi.out" 2>"$WORK/mpi.err" && ok || fail "mpirun pp=2: $(tail -c 600 "$WORK/mpi.err")"
  [ -f gpt2-mpi-pp2/metrics.jsonl ] && check "gpt2, pp=2 under mpirun vs 1 rank: losses" close gpt2-ref gpt2-mpi-pp2 1 8 1e-5
}

# --- per-glob learning rates: the glob that names the head matches on the last stage only (the
# stages then number their optimizer groups differently, and a checkpoint records them by their
# settings); a glob that matches no parameter anywhere is refused as on one rank
group_lr() {
  local lr=("${llama[@]}" "optimizer.group_lr={'lm_head.*': 0.0005}" checkpoint.every_steps=4)
  run 0 run quickstart "${lr[@]}" run.output_dir="$WORK/llama-lr-ref"
  if run 0 run quickstart "${lr[@]}" distributed.pipeline_parallel=2 run.output_dir="$WORK/llama-lr-pp2" \
    --nproc-per-node 2; then
    check "llama with a head learning rate, pp=2 vs 1 rank: losses" close llama-lr-ref llama-lr-pp2 1 8 1e-5
    mkdir llama-lr-from-pp && cp -r llama-lr-pp2/checkpoint-4 llama-lr-from-pp/
    run 0 resume "$WORK/llama-lr-from-pp/checkpoint-4" distributed.pipeline_parallel=1 --force \
      && check "llama with a head learning rate: pp=2's checkpoint resumed on 1 rank: losses 5-8" \
        close llama-lr-pp2 llama-lr-from-pp 5 8 1e-6
  fi
  run 2 run quickstart "${llama[@]}" "optimizer.group_lr={'lmhead.*': 0.0005}" distributed.pipeline_parallel=2 \
    run.output_dir="$WORK/refused-glob" --nproc-per-node 2 && has "glob 'lmhead.*' matches no parameter" err
}

# hybrid over 4 "nodes" of 2 ranks (four launchers), 2 stages: each stage's 4 data-parallel ranks
# span 2 nodes, zero3 inside a node and replicated across the two; against one rank accumulating 16
hybrid() {
  local nodes hybrid others=()
  run 0 run quickstart "${llama[@]}" trainer.grad_accum_steps=16 run.output_dir="$WORK/llama-accum16"
  nodes=(--nproc-per-node 2 --nnodes 4 --master-addr 127.0.0.1 --master-port "$(free_port)")
  hybrid=("${llama[@]}" distributed.strategy=hybrid distributed.pipeline_parallel=2 checkpoint.every_steps=4
          run.output_dir="$WORK/llama-hybrid-pp2")
  for n in 1 2 3; do
    "$HFTRAIN" run quickstart "${hybrid[@]}" "${nodes[@]}" --node-rank $n >"$WORK/node$n.out" 2>"$WORK/node$n.err" &
    others+=($!)
  done
  if run 0 run quickstart "${hybrid[@]}" "${nodes[@]}" --node-rank 0; then
    has "mesh: 8 ranks = data parallel 4 x tensor parallel 1 x pipeline parallel 2" err
    check "llama, hybrid over 4 nodes x 2 (dp 4 x pp 2) vs 1 rank accumulating 16: losses" \
      close llama-accum16 llama-hybrid-pp2 1 8 1e-5
    check "llama, hybrid over 4 nodes x 2 (dp 4 x pp 2) vs 1 rank accumulating 16: weights" \
      same_weights llama-accum16 llama-hybrid-pp2 1e-5
    mkdir llama-hybrid-pp2-from && cp -r llama-hybrid-pp2/checkpoint-4 llama-hybrid-pp2-from/
    run 0 resume "$WORK/llama-hybrid-pp2-from/checkpoint-4" distributed.strategy=ddp distributed.pipeline_parallel=1 \
      --force trainer.grad_accum_steps=16 \
      && check "llama: hybrid dp4 x pp2's checkpoint resumed on 1 rank: losses 5-8" \
        close llama-hybrid-pp2 llama-hybrid-pp2-from 5 8 1e-6
  fi
  for n in 0 1 2; do
    wait ${others[$n]} && ok || fail "hybrid pp=2: node $((n + 1)) exited: $(tail -c 600 "$WORK/node$((n + 1)).err")"
  done
}

# --- one micro-batch a step (nothing to overlap), against one rank
one_micro_batch() {
  run 0 run quickstart "${gpt2[@]}" trainer.grad_accum_steps=1 run.output_dir="$WORK/gpt2-accum1"
  run 0 run quickstart "${gpt2[@]}" trainer.grad_accum_steps=1 distributed.pipeline_parallel=2 \
    run.output_dir="$WORK/gpt2-pp2-accum1" --nproc-per-node 2 \
    && check "gpt2, pp=2 with 1 micro-batch vs 1 rank: losses" close gpt2-accum1 gpt2-pp2-accum1 1 8 1e-5
}

# --- dropout (0.1): each stage draws its own numbers; activation checkpointing replays them and a
# resume continues them exactly
dropout() {
  local drop=("${gpt2[@]}" model.dropout=0.1 distributed.pipeline_parallel=2)
  if run 0 run quickstart "${drop[@]}" checkpoint.every_steps=4 run.output_dir="$WORK/drop-pp2" --nproc-per-node 2; then
    run 0 run quickstart "${drop[@]}" model.activation_checkpointing=true run.output_dir="$WORK/drop-pp2-ckpt" \
      --nproc-per-node 2 && check "dropout, pp=2: activation checkpointing replays it" close drop-pp2 drop-pp2-ckpt 1 8 1e-6
    mkdir drop-pp2-resumed && cp -r drop-pp2/checkpoint-4 drop-pp2-resumed/
    run 0 resume "$WORK/drop-pp2-resumed/checkpoint-4" --nproc-per-node 2 \
      && check "dropout, pp=2: resumed at step 4, losses 5-8" close drop-pp2 drop-pp2-resumed 5 8 1e-6
  fi
}

# --- a checkpoint saved at tp2 x pp2: the whole model, each rank's optimizer pieces; resumed at dp=2
# under zero3 and on 1 rank with the same next losses
tp2_pp2_resume() {
  for m in gpt2 llama; do
    once $m-tp2-pp2 tp2_pp2_run $m
    [ -d $m-tp2-pp2/checkpoint-4 ] || continue
    run 0 verify "$WORK/$m-tp2-pp2/checkpoint-4"
    n=$(ls $m-tp2-pp2/checkpoint-4/optimizer/shard-*.safetensors | wc -l)
    [ "$n" = 4 ] && ok || fail "$m tp2 x pp2: $n optimizer shard files, expected 4 (each rank its pieces)"
    for to in one z3; do
      mkdir "$m-from-$to" && cp -r $m-tp2-pp2/checkpoint-4 "$m-from-$to/"
    done
    run 0 resume "$WORK/$m-from-one/checkpoint-4" distributed.pipeline_parallel=1 distributed.tensor_parallel=1 \
      distributed.sequence_parallel=false --force \
      && check "$m: tp2 x pp2's checkpoint resumed on 1 rank: losses 5-8" close $m-tp2-pp2 $m-from-one 5 8 1e-6
    run 0 resume "$WORK/$m-from-z3/checkpoint-4" distributed.strategy=zero3 distributed.pipeline_parallel=1 distributed.tensor_parallel=1 \
      distributed.sequence_parallel=false trainer.grad_accum_steps=2 --force --nproc-per-node 2 \
      && check "$m: tp2 x pp2's checkpoint resumed at dp=2 under zero3: losses 5-8" close $m-tp2-pp2 $m-from-z3 5 8 1e-6
  done
}
# and the other way: one rank's checkpoint resumed at pp=2
onto_pp() {
  if run 0 run quickstart "${llama[@]}" checkpoint.every_steps=4 run.output_dir="$WORK/llama-one-ckpt"; then
    mkdir llama-onto-pp && cp -r llama-one-ckpt/checkpoint-4 llama-onto-pp/
    run 0 resume "$WORK/llama-onto-pp/checkpoint-4" distributed.pipeline_parallel=2 --force --nproc-per-node 2 \
      && check "llama: 1 rank's checkpoint resumed at pp=2: losses 5-8" close llama-one-ckpt llama-onto-pp 5 8 1e-6
  fi
}

# --- `hftrain plan` with stages: each stage's blocks, Ψ and the activations it holds (1f1b: the first
# stage 2 micro-batches, the last 1; gpipe: all 4); the first stage's Ψ is the run's rank 0's; --memory
# lists pipelined layouts
plan() {
  once llama-pp2-1f1b pipelined llama pp2-1f1b
  if [ -f llama-pp2-1f1b/train.log ]; then
    run 0 plan quickstart "${llama[@]}" distributed.pipeline_parallel=2 --nproc 4 --memory 1GB
    has "pipeline parallel 2 (1f1b, 4 micro-batches a step)" out
    has "activations of 2 micro-batches at once" out
    has "tensor_parallel=1 pipeline_parallel=2 (data parallel 2) strategy=zero3" out
    check_py pp-plan-psi "$out" "$WORK/llama-pp2-1f1b/train.log" && ok || fail "plan's stage 0 Ψ is not the run's rank 0's"
    run 0 plan quickstart "${llama[@]}" distributed.pipeline_parallel=2 distributed.pipeline_schedule=gpipe --nproc 2
    has "activations of 4 micro-batches at once" out
    run 2 plan quickstart "${llama[@]}" distributed.pipeline_parallel=2 --nproc 3 && has "does not divide --nproc 3" err
    # interleaved: each stage's two chunks, their activations counted chunk by chunk
    run 0 plan quickstart "${llama[@]}" distributed.pipeline_parallel=2 distributed.pipeline_virtual_stages=2 --nproc 2
    has "pipeline parallel 2 (1f1b interleaved over 2 virtual stages, 4 micro-batches a step)" out
    has "stage 0: blocks 0-0, 2-2" out
    has "activations of 5 (chunk, micro-batch) pairs at once" out
  fi
}

# --- layouts that cannot run: exit 2 before any work, naming the rule and a fix
refused() {  # refused WHAT TEXT ARGS...: exit 2, TEXT in stderr, no checkpoint written
  local what=$1 text=$2
  shift 2
  run 2 run quickstart "${gpt2[@]}" run.output_dir="$WORK/refused" "$@" && has "$text" err
  [ -z "$(ls -d "$WORK"/refused/checkpoint-* 2>/dev/null)" ] && ok || fail "$what: a refused run wrote a checkpoint"
}
refused_layouts() {
  local nodes others=()
  refused "world size" "distributed.tensor_parallel x distributed.pipeline_parallel = 2 x 2 does not divide the world of 6" \
    distributed.pipeline_parallel=2 distributed.tensor_parallel=2 --nproc-per-node 6
  refused "more stages than blocks" "5 stages for 4 blocks" distributed.pipeline_parallel=5 --nproc-per-node 5
  refused "boundaries' count" "distributed.pipeline_stages has 2 numbers" distributed.pipeline_parallel=2 \
    "distributed.pipeline_stages=[0,4]" --nproc-per-node 2
  refused "boundaries' order" "distributed.pipeline_stages is not ascending" distributed.pipeline_parallel=2 \
    "distributed.pipeline_stages=[0,0,4]" --nproc-per-node 2
  refused "boundaries' range" "must run from 0 to model.n_layer=4" distributed.pipeline_parallel=2 \
    "distributed.pipeline_stages=[0,2,3]" --nproc-per-node 2
  refused "stages without a pipeline" "distributed.pipeline_stages is set but distributed.pipeline_parallel is 1" \
    "distributed.pipeline_stages=[0,2,4]"
  refused "virtual stages without a pipeline" "interleaves pipeline stages, but distributed.pipeline_parallel is 1" \
    distributed.pipeline_virtual_stages=2
  refused "more virtual stages than blocks" "2 stages x 3 virtual stages (distributed.pipeline_virtual_stages) for 4 blocks" \
    distributed.pipeline_parallel=2 distributed.pipeline_virtual_stages=3 --nproc-per-node 2
  refused "interleaved micro-batches not in groups of the stages" "in groups of distributed.pipeline_parallel=2" \
    distributed.pipeline_parallel=2 distributed.pipeline_virtual_stages=2 trainer.grad_accum_steps=3 --nproc-per-node 2
  refused "interleaved boundaries' count" "4 stages (distributed.pipeline_parallel=2 x pipeline_virtual_stages=2) need 5" \
    distributed.pipeline_parallel=2 distributed.pipeline_virtual_stages=2 "distributed.pipeline_stages=[0,2,4]" \
    --nproc-per-node 2
  # hybrid shards inside a node: 3 nodes of 4 ranks cut the 6 ranks of each of 2 stages unevenly
  nodes=(--nproc-per-node 4 --nnodes 3 --master-addr 127.0.0.1 --master-port "$(free_port)")
  for n in 1 2; do
    "$HFTRAIN" run quickstart "${gpt2[@]}" distributed.strategy=hybrid distributed.pipeline_parallel=2 \
      run.output_dir="$WORK/refused" "${nodes[@]}" --node-rank $n >"$WORK/node$n.out" 2>"$WORK/node$n.err" &
    others+=($!)
  done
  refused "hybrid with nodes that cut stages unevenly" "needs each node's 4 ranks to hold whole stages or equal parts" \
    distributed.pipeline_parallel=2 distributed.strategy=hybrid "${nodes[@]}" --node-rank 0
  for n in 0 1; do
    wait ${others[$n]}
    [ $? = 2 ] && ok || fail "hybrid cut unevenly: node $((n + 1)) did not exit 2: $(tail -c 300 "$WORK/node$((n + 1)).err")"
  done
  refused "encoder" "encoders are not split into stages" model.arch=bert distributed.pipeline_parallel=2 \
    --nproc-per-node 2
}

scenarios gpt2_layouts llama_layouts tp2_pp2 dp2_pp2 interleaved_dp2 zero3_pp3 zero3_gpipe under_mpirun group_lr hybrid \
  one_micro_batch dropout tp2_pp2_resume onto_pp plan refused_layouts
