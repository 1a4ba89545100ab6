#!/usr/bin/env bash
# End-to-end: multi-process training on the CPU with 2 ranks, through hftrain's own launcher and
# through mpirun. The same global batch on 2 ranks (ddp, zero1, zero2, zero3, bf16 weights with fp32
# masters under ddp, zero1 and zero2, with and without
# cpu_offload) and on 2 nodes of 2 ranks (hybrid) gives the losses and final weights of 1 rank with
# grad_accum_steps 2 (1e-5 relative); checkpoints hold one optimizer shard file per rank that holds
# a distinct shard (none for replicas) and move between world sizes and strategies; a killed rank,
# a stalled rank (collective timeout) and Ctrl-C end every process with a clear message and no
# orphans; the launcher holds the run directory for its workers.
# Usage: dist_test.sh path/to/hftrain [SCENARIO...] | --list   (tests/e2e/harness.sh)
source "$(dirname "${BASH_SOURCE[0]}")/harness.sh" "$@"
source "$SRC/tests/e2e/compare.sh"

cookie_corpus
common=(data.train="$WORK/corpus/*" "data.separator='%'" data.validation_fraction=0.1 model.n_layer=2 model.n_head=2
        model.d_model=32 model.max_seq_len=64 data.seq_len=32 model.vocab_size=260 trainer.micro_batch_size=4
        trainer.max_grad_norm=0.5 optimizer.lr=0.003 optimizer.weight_decay=0.1 scheduler.name=cosine
        scheduler.warmup_steps=3 trainer.log_every=1 trainer.max_steps=8 checkpoint.at_end=false trainer.device=cpu)
half=("${common[@]/trainer.micro_batch_size=4/trainer.micro_batch_size=2}")
bert=(model.arch=bert model.n_layer=2 model.n_head=2 model.d_model=32 model.max_seq_len=64 data.seq_len=64
      data.train="$SRC/recipes/data/reviews_example.csv" data.validation_fraction=0.2 tokenizer.type=hf
      tokenizer.path="$SRC/tests/fixtures/data/hf_bert_tokenizer.json" model.vocab_size=900 trainer.max_steps=8
      trainer.eval_every=4 trainer.log_every=1 optimizer.lr=0.003 scheduler.warmup_steps=2 "data.exclude=[]"
      "data.separator=''" checkpoint.at_end=false trainer.device=cpu trainer.micro_batch_size=4)

# memory_matches DIR [RANKS]: each rank's "memory on rank" line: parameters, gradients and optimizer
# state equal the ZeRO formula within that rank's reported buffers (the padding of the buckets).
memory_matches() { check_py memory-matches "$WORK/$1" "${2:-2}"; }
# shards CHECKPOINT N: the checkpoint holds exactly N optimizer shard files, numbered 0..N-1 of N
# (one per rank that holds a distinct shard; replicas write none), and verifies. Prints their sizes.
shards() {
  local have last
  have=$(ls "$WORK/$1"/optimizer/shard-*.safetensors 2>/dev/null | wc -l)
  last=$WORK/$1/optimizer/shard-$(printf %05d $(($2 - 1)))-of-$(printf %05d "$2").safetensors
  if [ "$have" = "$2" ] && [ -s "$last" ]; then
    ok
  else
    fail "$1: $have optimizer shard files, expected $2: $(ls "$WORK/$1/optimizer" 2>&1 | tr '\n' ' ')"
  fi
  run 0 verify "$WORK/$1"
  echo "optimizer shard bytes, $1: $(cd "$WORK/$1/optimizer" 2>/dev/null && stat -c '%n %s' shard-* | tr '\n' ' ')"
}
one_writer() { check_py one-writer "$WORK/$1"; }  # one_writer DIR: rank 0 alone writes metrics: one record per step, one event file

no_orphans() {  # no_orphans DIR: no process still has DIR on its command line
  sleep 0.5
  if pgrep -f "output_dir=$WORK/$1" >/dev/null; then fail "processes of $1 outlived the job: $(pgrep -af "output_dir=$WORK/$1")"; else ok; fi
}

# the reference most scenarios compare with: one process, two micro-batches per step
ref() { once ref run 0 run quickstart "${common[@]}" trainer.grad_accum_steps=2 run.output_dir="$WORK/ref"; }

# --- hftrain's own launcher: the same global batch on 2 ranks, each strategy; the checkpoint at
# the end holds one optimizer shard per rank under zero, one file for both ranks under ddp
own_launcher() {
  ref
  for s in ddp zero1 zero2 zero3; do
    run 0 run quickstart "${common[@]}" distributed.strategy=$s checkpoint.every_steps=8 run.output_dir="$WORK/own-$s" \
      --nproc-per-node 2 || continue
    has "[rank 0]" err
    has "backend mpi, strategy $s" err
    [ -s "own-$s/train.log" ] && [ -s "own-$s/train-rank1.log" ] && ok || fail "own-$s: a log file per rank is missing"
    check "own launcher $s vs 1 rank: losses" close ref "own-$s" 1 8
    check "own launcher $s vs 1 rank: weights" same_weights ref "own-$s"
    check "own launcher $s: bytes per rank follow the ZeRO formulas" memory_matches "own-$s"
    check "own launcher $s: one metrics record per step, one event file" one_writer "own-$s"
    if [ $s = ddp ]; then shards own-$s/checkpoint-8 1; else shards own-$s/checkpoint-8 2; fi
  done
  no_orphans own-ddp
  # zero3 shards the weights too: 4Ψ/N bytes of parameters on each rank
  grep -q "per rank (8 + 8)Ψ/N): parameters 71680 B" own-zero3/train.log && ok || fail "zero3: parameters are not 4Ψ/N"
}

# --- one owner: hftrain's launcher holds the run directory's lock for its workers (rank 0 paused
# 8 s after step 4 by a test hook); a second job into the directory is refused naming it
owner() {
  local owner
  ref
  HFTRAIN_TEST_FAULT=0:4:pause "$HFTRAIN" run quickstart "${common[@]}" run.output_dir="$WORK/owned" \
    --nproc-per-node 2 >owned.out 2>owned.err &
  owner=$!
  for _ in $(seq 1 300); do grep -qE '"step": ?3[,}]' owned/metrics.jsonl 2>/dev/null && break; sleep 0.05; done
  sleep 0.5
  run 2 run quickstart "${common[@]}" run.output_dir="$WORK/owned" --nproc-per-node 2
  has "is in use by another hftrain process" err
  has "pid $owner" err
  wait $owner && ok || fail "the owning job exited $?: $(tail -c 400 owned.err)"
  check "the owning job vs 1 rank: losses" close ref owned 1 8
}

# --- cpu_offload: the optimizer state (and zero3's master shards) in CPU memory, the update there
cpu_offload() {
  ref
  for s in zero2 zero3; do
    run 0 run quickstart "${common[@]}" distributed.strategy=$s distributed.cpu_offload=true \
      run.output_dir="$WORK/off-$s" --nproc-per-node 2 || continue
    has "in CPU memory (distributed.cpu_offload)" err
    check "$s with cpu_offload vs 1 rank: losses" close ref "off-$s" 1 8
    check "$s with cpu_offload vs 1 rank: weights" same_weights ref "off-$s"
  done
  run 2 run quickstart "${common[@]}" distributed.cpu_offload=true --nproc-per-node 2
  has "distributed.cpu_offload needs a zero strategy" err
}

# --- elementwise optimizers shard: each rank steps adagrad's or rmsprop's state for its chunk only
elementwise_optimizers() {
  local extra
  for o in adagrad rmsprop; do
    extra=(optimizer.adagrad.lr_decay=0.01)
    [ $o = rmsprop ] && extra=(optimizer.momentum=0.5)
    run 0 run quickstart "${common[@]}" optimizer.name=$o "${extra[@]}" trainer.grad_accum_steps=2 \
      run.output_dir="$WORK/ref-$o" || continue
    run 0 run quickstart "${common[@]}" optimizer.name=$o "${extra[@]}" distributed.strategy=zero2 \
      run.output_dir="$WORK/z2-$o" --nproc-per-node 2 || continue
    check "$o under zero2 on 2 ranks vs 1 rank: losses" close "ref-$o" "z2-$o" 1 8
    check "$o under zero2 on 2 ranks vs 1 rank: weights" same_weights "ref-$o" "z2-$o"
  done
}

# --- schedule_free_adamw shards too; its switch to the averaged point before each save is
# collective under zero2 (the switched pieces are all-gathered)
schedule_free() {
  local sf=(optimizer.name=schedule_free_adamw scheduler.name=constant scheduler.warmup_steps=0
            optimizer.schedule_free.warmup_steps=3 checkpoint.every_steps=4)
  if run 0 run quickstart "${common[@]}" "${sf[@]}" trainer.grad_accum_steps=2 run.output_dir="$WORK/ref-sf"; then
    for s in zero2 zero3; do
      run 0 run quickstart "${common[@]}" "${sf[@]}" distributed.strategy=$s run.output_dir="$WORK/$s-sf" \
        --nproc-per-node 2 || continue
      check "schedule_free_adamw under $s on 2 ranks vs 1 rank: losses" close ref-sf "$s-sf" 1 8
      check "schedule_free_adamw under $s on 2 ranks vs 1 rank: weights" same_weights ref-sf "$s-sf"
    done
  fi
}

# --- EMA weights are optimizer state: under zero1 and zero3 each rank averages its own pieces (and
# swaps them in for each evaluation, collectively under zero1); the evaluations and the exported
# average equal 1 rank's, and each rank's memory line counts the average with the optimizer state
ema() {
  local e=(trainer.ema.enabled=true trainer.ema.decay=0.8 trainer.eval_every=4)
  run 0 run quickstart "${common[@]}" "${e[@]}" trainer.grad_accum_steps=2 run.output_dir="$WORK/ref-ema" || return
  for s in zero1 zero3; do
    run 0 run quickstart "${common[@]}" "${e[@]}" distributed.strategy=$s run.output_dir="$WORK/$s-ema" \
      --nproc-per-node 2 || continue
    check "EMA under $s on 2 ranks vs 1 rank: losses" close ref-ema "$s-ema" 1 8
    check "EMA under $s on 2 ranks vs 1 rank: evaluations of the average" check_py same-eval \
      "$WORK/ref-ema/metrics.jsonl" "$WORK/$s-ema/metrics.jsonl"
    check "EMA under $s on 2 ranks vs 1 rank: the exported average" same_weights ref-ema "$s-ema"
    check "EMA under $s: the memory lines count the average" memory_matches "$s-ema"
  done
}

# --- checkpoint.async on 2 ranks: each rank writes its optimizer shard in the background, the
# checkpoint is published once both are in (the ranks agree on it in the stop agreement, here on
# steps that do not log, so a step late) and holds what a save written at once holds; it resumes
# bit for bit. Slowed down (HFTRAIN_TEST_SLOW_SAVE), the save is still in flight at the next one,
# which waits for it: the same bytes again.
async_save() {
  local a=(distributed.strategy=zero2 checkpoint.every_steps=4 checkpoint.keep_last=0 trainer.log_every=4 trainer.max_steps=12) f run
  run 0 run quickstart "${common[@]}" "${a[@]}" run.output_dir="$WORK/sync-save" --nproc-per-node 2 || return
  run 0 run quickstart "${common[@]}" "${a[@]}" checkpoint.async=true run.output_dir="$WORK/async-save" \
    --nproc-per-node 2 || return
  grep -qE 'in the background.*; written in [0-9]+ ms, published after step [0-9]+$' \
    <<<"$err" && ok || fail "async save on 2 ranks: no save was published through the stop agreement: $(grep -F 'in the background' <<<"$err")"
  export HFTRAIN_TEST_SLOW_SAVE=30
  run 0 run quickstart "${common[@]}" "${a[@]}" checkpoint.async=true run.output_dir="$WORK/async-slow" \
    --nproc-per-node 2
  unset HFTRAIN_TEST_SLOW_SAVE
  for run in async-save async-slow; do
    check "async save on 2 ranks ($run): the loss of a save written at once" close sync-save $run 12 12 0
    for f in model.safetensors optimizer/shard-00000-of-00002.safetensors optimizer/shard-00001-of-00002.safetensors \
      optimizer/index.json trainer_state.json rng.safetensors; do
      cmp -s "sync-save/checkpoint-8/$f" "$run/checkpoint-8/$f" && ok \
        || fail "async save on 2 ranks ($run): checkpoint-8/$f differs from the save written at once"
    done
  done
  shards async-save/checkpoint-4 2
  mkdir async-resumed && cp -r async-save/checkpoint-4 async-resumed/
  run 0 resume async-resumed --nproc-per-node 2 || return
  check "async save on 2 ranks: resumed" close sync-save async-resumed 8 8 0
  check "async save on 2 ranks: resumed" close sync-save async-resumed 12 12 0
}

# --- adamw_8bit's state comes in blocks of 256 elements, one scale each: under every zero
# strategy (and cpu_offload) the chunks are aligned to the blocks and each rank steps the blocks
# of its chunk; the same weights as 1 rank. Its checkpoint under zero3 (codes and scales in pieces)
# resumes under ddp and under 1 rank to the weights zero3 reached.
adamw_8bit() {
  local b8=(optimizer.name=adamw_8bit checkpoint.every_steps=4) extra
  if run 0 run quickstart "${common[@]}" "${b8[@]}" trainer.grad_accum_steps=2 run.output_dir="$WORK/ref-8bit"; then
    for s in zero1 zero2 zero3 zero2-offload; do
      extra=(distributed.strategy=${s%-offload})
      [ $s = zero2-offload ] && extra+=(distributed.cpu_offload=true)
      run 0 run quickstart "${common[@]}" "${b8[@]}" "${extra[@]}" run.output_dir="$WORK/$s-8bit" \
        --nproc-per-node 2 || continue
      check "adamw_8bit under $s on 2 ranks vs 1 rank: losses" close ref-8bit "$s-8bit" 1 8
      check "adamw_8bit under $s on 2 ranks vs 1 rank: weights" same_weights ref-8bit "$s-8bit" 1e-4
    done
    check "adamw_8bit: bytes per rank follow the ZeRO-3 formula" memory_matches zero3-8bit
    if [ -d zero3-8bit/checkpoint-4 ]; then
      shards zero3-8bit/checkpoint-4 2
      mkdir ddp-from-zero3-8bit one-from-zero3-8bit
      cp -r zero3-8bit/checkpoint-4 ddp-from-zero3-8bit/ && cp -r zero3-8bit/checkpoint-4 one-from-zero3-8bit/
      run 0 resume ddp-from-zero3-8bit/checkpoint-4 distributed.strategy=ddp --force --nproc-per-node 2 \
        && check "adamw_8bit: zero3's checkpoint resumed under ddp: weights" same_weights zero3-8bit ddp-from-zero3-8bit 1e-4
      run 0 resume one-from-zero3-8bit/checkpoint-4 distributed.strategy=ddp trainer.grad_accum_steps=2 --force \
        && check "adamw_8bit: zero3's checkpoint resumed on 1 rank: weights" same_weights zero3-8bit one-from-zero3-8bit 1e-4
    fi
  fi
}

# --- optimizers whose state is neither element-wise nor block-wise (galore_adamw's and
# apollo_adamw's projections, muon's whole matrices, adafactor's factors): ddp, and zero1 with the state partitioned by whole parameters (each rank
# steps its own and broadcasts them); a checkpoint of the partitioned state resumes under ddp;
# zero2 and cpu_offload, which cut parameters, refuse them. Without clipping: zero1 sums the
# gradient norm over its bucket chunks, ddp over whole parameters, and on a 16-core machine the two
# roundings differ by an ulp, which the clip coefficient carries into every update (adafactor's
# normalisation makes that 0.4% by step 8). The state's partitioning is what these runs test.
partitioned_state() {  # partitioned_state OPTIMIZER
  local o=$1
  local extra=(optimizer.name=$o checkpoint.every_steps=4 trainer.max_grad_norm=.inf)
  [ $o = galore_adamw ] && extra+=(optimizer.galore.rank=4 optimizer.galore.update_proj_gap=3)
  [ $o = apollo_adamw ] && extra+=(optimizer.apollo.rank=4 optimizer.apollo.update_proj_gap=3)
  run 0 run quickstart "${common[@]}" "${extra[@]}" trainer.grad_accum_steps=2 run.output_dir="$WORK/ref-$o" || return
  for s in ddp zero1; do
    run 0 run quickstart "${common[@]}" "${extra[@]}" distributed.strategy=$s run.output_dir="$WORK/$s-$o" \
      --nproc-per-node 2 || continue
    # adafactor's first steps normalise each gradient element by its own factored size, which
    # turns the rounding of another summation order (2 ranks' all-reduce against 1 rank's
    # accumulation) into differences of 0.3% by step 7: it is compared with ddp below instead.
    [ $o = adafactor ] && continue
    # muon orthogonalises in bf16 (as torch.optim.Muon): the gradients of the two summation orders,
    # an fp32 ulp apart from step 4 on, round to other bf16 values in a few elements, and the
    # updates carry that (1e-6 in the loss, 4e-5 in the gradient norm, 2e-4 in the weights by step 8).
    local losses=1e-5 weights=1e-4
    [ $o = muon ] && losses=1e-4 weights=1e-3
    check "$o under $s on 2 ranks vs 1 rank: losses" close "ref-$o" "$s-$o" 1 8 $losses
    check "$o under $s on 2 ranks vs 1 rank: weights" same_weights "ref-$o" "$s-$o" $weights
  done
  # The same all-reduced gradients: zero1's partitioned steps are ddp's, bit for bit.
  check "$o under zero1 vs ddp on 2 ranks: weights" same_weights "ddp-$o" "zero1-$o" 0
  if [ -d "zero1-$o/checkpoint-4" ]; then
    shards "zero1-$o/checkpoint-4" 2
    mkdir "ddp-from-zero1-$o" && cp -r "zero1-$o/checkpoint-4" "ddp-from-zero1-$o/"
    # The losses name the first step that differs (the state restored, or the steps after it);
    # the logged gradient norms differ by the two summation orders above.
    if run 0 resume "ddp-from-zero1-$o/checkpoint-4" distributed.strategy=ddp --force --nproc-per-node 2; then
      check "$o: zero1's partitioned checkpoint resumed under ddp: losses" close "zero1-$o" "ddp-from-zero1-$o" 5 8 1e-6
      check "$o: zero1's partitioned checkpoint resumed under ddp: weights" same_weights "zero1-$o" "ddp-from-zero1-$o" 0
    fi
  fi
  run 2 run quickstart "${common[@]}" "${extra[@]}" distributed.strategy=zero2 run.output_dir="$WORK/z2-$o" \
    --nproc-per-node 2
  has "which splits parameters across ranks" err
}
galore_adamw() { partitioned_state galore_adamw; }
# muon: each rank orthogonalises the whole matrices it owns (the AdamW part too), then broadcasts them
muon() { partitioned_state muon; }
apollo_adamw() { partitioned_state apollo_adamw; }
adafactor() { partitioned_state adafactor; }

# --- zero3 with two micro-batches per step on each rank and activation checkpointing: the units
# are gathered again for the recomputation, and the gradients reduced after every micro-batch
zero3_accumulation() {
  ref
  run 0 run quickstart "${half[@]}" distributed.strategy=zero3 trainer.grad_accum_steps=2 \
    model.activation_checkpointing=true run.output_dir="$WORK/z3-accum" --nproc-per-node 2
  check "zero3, 2 micro-batches, activation checkpointing vs 1 rank: losses" close ref z3-accum 1 8
  check "zero3, 2 micro-batches, activation checkpointing vs 1 rank: weights" same_weights ref z3-accum
}

# --- mixed precision: bf16 autocast on fp32 masters under every sharding strategy. bf16 rounds
# differently when the batch is split, so the bound is bf16's (1e-3 relative), not fp32's.
bf16_autocast() {
  run 0 run quickstart "${common[@]}" trainer.precision=bf16 trainer.grad_accum_steps=2 run.output_dir="$WORK/bf16-ref"
  for s in ddp zero2 zero3; do
    run 0 run quickstart "${common[@]}" trainer.precision=bf16 distributed.strategy=$s run.output_dir="$WORK/bf16-$s" \
      --nproc-per-node 2 || continue
    check "bf16 $s on 2 ranks vs 1 rank: losses within 1e-3" close bf16-ref "bf16-$s" 1 8 1e-3
  done
}

# --- bf16 weights with fp32 masters (trainer.param_dtype=bf16) under ddp, and under zero1/2, whose
# masters are their pieces: 2 ranks against 1 rank accumulating 2 micro-batches (in fp32, where
# the ranks reduce in bf16: a bf16 bound); the final models hold the fp32 masters; zero2's
# checkpoint resumes on 2 ranks bit for bit and on 1 rank
bf16_params() {
  local bf16p=("${common[@]}" trainer.precision=bf16 trainer.param_dtype=bf16)
  run 0 run quickstart "${bf16p[@]}" trainer.grad_accum_steps=2 run.output_dir="$WORK/bf16p-ref"
  for s in ddp zero1 zero2; do
    run 0 run quickstart "${bf16p[@]}" distributed.strategy=$s checkpoint.every_steps=4 run.output_dir="$WORK/bf16p-$s" \
      --nproc-per-node 2 || continue
    check "param_dtype=bf16 $s on 2 ranks vs 1 rank: losses within 2e-3" close bf16p-ref "bf16p-$s" 1 8 2e-3
    check "param_dtype=bf16 $s on 2 ranks vs 1 rank: fp32 weights within 1e-2" same_weights bf16p-ref "bf16p-$s" 1e-2
  done
  if [ -d bf16p-zero2/checkpoint-4 ]; then
    mkdir bf16p-zero2-again && cp -r bf16p-zero2/checkpoint-4 bf16p-zero2-again/
    run 0 resume bf16p-zero2-again/checkpoint-4 --nproc-per-node 2 \
      && check "param_dtype=bf16 zero2 resumed on 2 ranks: weights bit for bit" same_weights bf16p-zero2 bf16p-zero2-again 0
    mkdir bf16p-zero2-one && cp -r bf16p-zero2/checkpoint-4 bf16p-zero2-one/
    run 0 resume bf16p-zero2-one/checkpoint-4 distributed.strategy=ddp trainer.grad_accum_steps=2 --force \
      && check "param_dtype=bf16 zero2's checkpoint resumed on 1 rank: losses within 2e-3" close bf16p-zero2 bf16p-zero2-one 5 8 2e-3
  fi
}

# --- hybrid on 2 "nodes" of 2 ranks (two launchers on this machine): zero3 inside each node,
# replicated across them; the same global batch (4 ranks x 2 sequences); only node 0 saves the
# optimizer shards (node 1 holds the same ones)
hybrid() {
  local nodes node1
  ref
  nodes=(--nproc-per-node 2 --nnodes 2 --master-addr 127.0.0.1 --master-port "$(free_port)")
  "$HFTRAIN" run quickstart "${half[@]}" distributed.strategy=hybrid checkpoint.every_steps=8 \
    run.output_dir="$WORK/hybrid" "${nodes[@]}" --node-rank 1 >"$WORK/node1.out" 2>"$WORK/node1.err" &
  node1=$!
  run 0 run quickstart "${half[@]}" distributed.strategy=hybrid checkpoint.every_steps=8 run.output_dir="$WORK/hybrid" \
    "${nodes[@]}" --node-rank 0
  wait $node1 && ok || fail "hybrid: node 1 exited $?: $(tail -c 600 "$WORK/node1.err")"
  has "4 ranks" err
  check "hybrid on 2 nodes x 2 ranks vs 1 rank: losses" close ref hybrid 1 8
  check "hybrid on 2 nodes x 2 ranks vs 1 rank: weights" same_weights ref hybrid
  check "hybrid: bytes per rank follow the ZeRO-3 formula with N = 2 (a node)" memory_matches hybrid 4
  shards hybrid/checkpoint-8 2
  no_orphans hybrid
}

# --- mpirun, the same binary
under_mpirun() {
  if ! command -v mpirun >/dev/null; then
    echo "SKIP: mpirun not found; the mpirun half of this test did not run"
    return 0
  fi
  ref
  for s in ddp zero1 zero2 zero3; do
    "$HFTRAIN" --version >/dev/null
    "${MPIRUN[@]}" -np 2 "$HFTRAIN" run quickstart "${common[@]}" distributed.strategy=$s run.output_dir="$WORK/mpi-$s" \
      >"$WORK/mpi.out" 2>"$WORK/mpi.err" && ok || { fail "mpirun $s: $(tail -c 600 "$WORK/mpi.err")"; continue; }
    grep -q "\[rank 0\] distributed: 2 ranks" "$WORK/mpi.err" && ok || fail "mpirun $s: no rank-tagged start line"
    check "mpirun $s vs 1 rank: losses" close ref "mpi-$s" 1 8
    check "mpirun $s vs 1 rank: weights" same_weights ref "mpi-$s"
    check "mpirun $s: one metrics record per step, one event file" one_writer "mpi-$s"
  done
}

# --- NCCL: 2 ranks on 2 GPUs where there are; a clear skip elsewhere
nccl() {
  local gpus cuda
  gpus=$("$HFTRAIN" --version | grep -o "cuda:[0-9]*" | wc -l)
  if [ "$gpus" -ge 2 ]; then
    cuda=("${common[@]/trainer.device=cpu/trainer.device=cuda}")
    run 0 run quickstart "${cuda[@]}" trainer.grad_accum_steps=2 run.output_dir="$WORK/gpu-ref"
    for s in ddp zero1 zero2 zero3; do
      run 0 run quickstart "${cuda[@]}" distributed.strategy=$s run.output_dir="$WORK/nccl-$s" --nproc-per-node 2 || continue
      has "backend nccl, strategy $s" err
      check "nccl $s vs 1 GPU: losses" close gpu-ref "nccl-$s" 1 8
    done
  else
    echo "SKIP: the NCCL half of this test needs 2 CUDA devices; this machine has $gpus"
  fi
}

# --- checkpoints move between world sizes and strategies: 2 ranks zero2 or zero3 -> 1 rank ddp,
# and 1 rank -> 2 ranks zero1 or zero3
world_sizes() {
  ref
  for s in zero2 zero3; do
    run 0 run quickstart "${common[@]}" distributed.strategy=$s checkpoint.every_steps=4 run.output_dir="$WORK/save-$s" \
      --nproc-per-node 2
    shards "save-$s/checkpoint-4" 2
    mkdir "one-$s" && cp -r "save-$s/checkpoint-4" "one-$s/"
    run 0 resume "one-$s/checkpoint-4" distributed.strategy=ddp trainer.grad_accum_steps=2 --force
    check "$s on 2 ranks, resumed on 1 rank: losses" close ref "one-$s" 5 8
    check "$s on 2 ranks, resumed on 1 rank: weights" same_weights ref "one-$s"
  done
  run 0 run quickstart "${common[@]}" trainer.grad_accum_steps=2 checkpoint.every_steps=4 run.output_dir="$WORK/single"
  for s in zero1 zero3; do
    mkdir "two-$s" && cp -r single/checkpoint-4 "two-$s/"
    run 0 resume "two-$s/checkpoint-4" distributed.strategy=$s trainer.grad_accum_steps=1 --force --nproc-per-node 2
    check "1 rank, resumed as $s on 2 ranks: losses" close ref "two-$s" 5 8
    check "1 rank, resumed as $s on 2 ranks: weights" same_weights ref "two-$s"
  done
  # a zero3 checkpoint exports like any other (rank 0 wrote the model whole)
  run 0 export save-zero3/checkpoint-4 --hf "$WORK/z3-hf"
  [ -s z3-hf/config.json ] && [ -s z3-hf/model.safetensors ] && ok || fail "export of a zero3 checkpoint wrote no model"
}
# zero3 on 2 ranks -> zero2 on 3 ranks: each of the 3 reads its pieces out of the 2 shard files,
# and the same global batch (2 x 3 = 3 x 2 sequences) continues at the same global sample; the
# 3-rank checkpoint then holds 3 shards
three_ranks() {
  local three=("${common[@]/trainer.micro_batch_size=4/trainer.micro_batch_size=3}")
  run 0 run quickstart "${three[@]}" distributed.strategy=zero3 checkpoint.every_steps=4 run.output_dir="$WORK/save-z3" \
    --nproc-per-node 2
  shards save-z3/checkpoint-4 2
  mkdir three-z2 && cp -r save-z3/checkpoint-4 three-z2/
  run 0 resume three-z2/checkpoint-4 distributed.strategy=zero2 trainer.micro_batch_size=2 --force --nproc-per-node 3
  has "3 ranks" err
  check "zero3 on 2 ranks, resumed as zero2 on 3 ranks: losses" close save-z3 three-z2 5 8
  check "zero3 on 2 ranks, resumed as zero2 on 3 ranks: weights" same_weights save-z3 three-z2
  shards three-z2/checkpoint-8 3
}

# --- sequence classification (a BERT encoder on labelled CSV) under ddp and zero3: 2 ranks equal
# 1 rank with two micro-batches, losses and weights
classification() {
  run 0 run quickstart "${bert[@]}" trainer.grad_accum_steps=2 run.output_dir="$WORK/bert-ref"
  has "eval_accuracy" err
  for s in ddp zero3; do
    run 0 run quickstart "${bert[@]}" distributed.strategy=$s run.output_dir="$WORK/bert-$s" --nproc-per-node 2 || continue
    check "classification, $s on 2 ranks vs 1 rank: losses" close bert-ref "bert-$s" 1 8
    check "classification, $s on 2 ranks vs 1 rank: weights" same_weights bert-ref "bert-$s"
  done
}

# --- token classification (tagged sentences) under ddp: 2 ranks equal 1 rank with two micro-batches,
# and the entity-level metrics of the evaluation (each rank's counts summed) equal one rank's
token_classification() {
  local ner=("${bert[@]}" model.task=token_classification data.train="$SRC/recipes/data/ner_example.jsonl"
             data.text_field=tokens data.label_field=ner_tags)
  run 0 run quickstart "${ner[@]}" trainer.grad_accum_steps=2 run.output_dir="$WORK/ner-ref"
  has "eval_precision" err
  if run 0 run quickstart "${ner[@]}" distributed.strategy=ddp run.output_dir="$WORK/ner-ddp" --nproc-per-node 2; then
    check "token classification, ddp on 2 ranks vs 1 rank: losses" close ner-ref ner-ddp 1 8
    check_py entity-metrics "$WORK/ner-ref" "$WORK/ner-ddp" && ok \
      || fail "token classification: 2 ranks' entity metrics differ from 1 rank's"
  fi
}

# --- a rank killed mid-run: everything stops, the launcher names the rank and the signal
killed_rank() {
  local start code
  start=$(date +%s)
  HFTRAIN_TEST_FAULT=1:3:kill run 137 run quickstart "${common[@]}" run.output_dir="$WORK/killed" --nproc-per-node 2
  has "rank 1 (pid" err
  has "was killed by signal 9" err
  [ $(( $(date +%s) - start )) -lt 60 ] && ok || fail "the job took $(( $(date +%s) - start )) s to stop after a rank died"
  no_orphans killed
  if command -v mpirun >/dev/null; then
    HFTRAIN_TEST_FAULT=1:3:kill timeout 120 "${MPIRUN[@]}" -np 2 -x HFTRAIN_TEST_FAULT "$HFTRAIN" run quickstart \
      "${common[@]}" run.output_dir="$WORK/mpi-killed" >"$WORK/mpi.out" 2>"$WORK/mpi.err"
    code=$?
    [ "$code" != 0 ] && [ "$code" != 124 ] && ok || fail "mpirun with a killed rank exited $code"
    no_orphans mpi-killed
  fi
}

# --- a stalled rank: the others time out, name it and the phase, and every process ends
stalled_rank() {
  HFTRAIN_TEST_FAULT=1:3:stall run 1 run quickstart "${common[@]}" trainer.max_steps=20 distributed.timeout=3s \
    run.output_dir="$WORK/stalled" --nproc-per-node 2
  has "did not complete within 3.0 s, the budget of the training step phase" err
  has "did not arrive: rank 1 (at collective #" err
  no_orphans stalled
}

# --- Ctrl-C reaches every worker: they save a checkpoint and exit 130, and so does the launcher
ctrl_c() {
  local launcher code
  "$HFTRAIN" run quickstart "${common[@]}" trainer.max_steps=100000 run.output_dir="$WORK/interrupted" --nproc-per-node 2 \
    >"$WORK/int.out" 2>"$WORK/int.err" &
  launcher=$!
  for _ in $(seq 1 300); do grep -q "step 3/" "$WORK/int.err" 2>/dev/null && break; sleep 0.1; done
  kill -INT $launcher
  wait $launcher
  code=$?
  [ "$code" = 130 ] && ok || fail "after Ctrl-C the launcher exited $code, expected 130: $(tail -c 600 "$WORK/int.err")"
  ls interrupted/checkpoint-* >/dev/null 2>&1 && ok || fail "no checkpoint saved on Ctrl-C"
  no_orphans interrupted
}

# --- plan: the table for every strategy, without training
plan() {
  run 0 plan quickstart "${common[@]}" --nproc 4 --nproc-per-node 2
  has "zero2    4Ψ + (4 + 8)Ψ/N" out
  has "zero3    (8 + 8)Ψ/N" out
  has "hybrid   (8 + 8)Ψ/N (N=2)" out
  has "Ψ = 35840 parameters" out
}

# --- bad input is reported once, by the launcher, before any worker starts
bad_input() {
  run 2 run quickstart "${common[@]}" trainer.max_stepz=3 --nproc-per-node 2
  has "trainer.max_stepz" err
  run 2 run quickstart "${common[@]}" --nproc-per-node 2 --nnodes 2
  has "--master-addr" err
}

scenarios own_launcher owner cpu_offload elementwise_optimizers schedule_free ema async_save adamw_8bit galore_adamw muon apollo_adamw adafactor \
  zero3_accumulation bf16_autocast bf16_params hybrid under_mpirun nccl world_sizes three_ranks classification \
  token_classification killed_rank stalled_rank ctrl_c plan bad_input
