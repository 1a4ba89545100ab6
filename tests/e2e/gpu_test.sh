#!/usr/bin/env bash
# End-to-end on one CUDA device, through the real binary: fp32 on the GPU equals fp32 on the CPU
# (1e-4, different kernels); bf16 autocast, fp16 with dynamic loss scaling and tf32 train and stay
# near fp32; metrics.jsonl carries the MFU and the CUDA peak memory, fp16 runs the loss scale and
# the skipped steps; a resume on the GPU with dropout continues exactly (the CUDA generator is in
# the checkpoint); zero3 with cpu_offload in one process equals a plain GPU run; a BERT classifier
# trains on the GPU; ModernBERT and DeBERTa-v2 classifiers equal the CPU's fp32 there and train in
# bf16; `generate --device cuda` gives the CPU's greedy text. Without a CUDA device
# it prints why and exits 77, which ctest reports as skipped.
# Usage: gpu_test.sh path/to/hftrain   (tests/e2e/harness.sh)
source "$(dirname "${BASH_SOURCE[0]}")/harness.sh" "$@"
if ! "$HFTRAIN" --version | grep -q "cuda:0"; then
  echo "SKIP: no CUDA device visible to this hftrain ($("$HFTRAIN" --version | tr '\n' ' '))"
  exit 77
fi
source "$SRC/tests/e2e/compare.sh"
"$HFTRAIN" --version | grep -i "cuda"

cookie_corpus 200
common=(data.train="$WORK/corpus/*" "data.separator='%'" data.validation_fraction=0.1 model.n_layer=2 model.n_head=2
        model.d_model=64 model.max_seq_len=64 data.seq_len=64 model.vocab_size=260 trainer.micro_batch_size=8
        trainer.max_grad_norm=1.0 optimizer.lr=0.003 scheduler.name=cosine scheduler.warmup_steps=3
        trainer.log_every=1 trainer.max_steps=8 trainer.eval_every=0 checkpoint.at_end=false)
gpu=("${common[@]}" trainer.device=cuda)

# metrics FILE PRECISION: every step record has the fields of the issue, numbers where they must be
# (MFU and peak memory on a GPU; loss scale and skipped steps under fp16), and the loss fell.
metrics() { check_py gpu-metrics "$WORK/$1/metrics.jsonl" "$2"; }

# --- fp32: the GPU gives the CPU's losses (different kernels: 1e-4) and the metrics of a GPU run
run 0 run quickstart "${common[@]}" trainer.device=cpu run.output_dir="$WORK/cpu"
run 0 run quickstart "${gpu[@]}" run.output_dir="$WORK/fp32" && has "on cuda:0" err
check "fp32 on the GPU vs the CPU: losses" close cpu fp32 1 8 1e-4
check "fp32 on the GPU vs the CPU: weights" same_weights cpu fp32 1e-4
check "fp32 metrics" metrics fp32 fp32

# --- reduced precision: trains, stays near fp32, reports what it should
for p in bf16 fp16; do
  run 0 run quickstart "${gpu[@]}" trainer.precision=$p trainer.max_steps=40 run.output_dir="$WORK/$p-long" || continue
  check "$p metrics" metrics $p-long $p
  run 0 run quickstart "${gpu[@]}" trainer.precision=$p trainer.fp16_init_scale=1024 run.output_dir="$WORK/$p"
  check "$p vs fp32: losses within 2e-2" close fp32 $p 1 8 2e-2
done
run 0 run quickstart "${gpu[@]}" trainer.tf32=true run.output_dir="$WORK/tf32"
check "tf32 vs fp32: losses within 1e-2" close fp32 tf32 1 8 1e-2
# A scale no fp16 gradient survives: every step is skipped, counted in metrics.jsonl, and named in
# the log with the scale it backs off to.
run 0 run quickstart "${gpu[@]}" trainer.precision=fp16 trainer.fp16_init_scale=1e30 trainer.max_steps=4 \
  run.output_dir="$WORK/fp16-overflow"
has "skipped: inf/NaN gradients at loss scale" err
check "fp16 overflow: every step skipped and counted" check_py fp16-overflow "$WORK/fp16-overflow/metrics.jsonl"

# --- exact resume on the GPU with dropout: the CUDA generator travels in the checkpoint
drop=("${gpu[@]}" model.dropout=0.1 checkpoint.every_steps=4)
run 0 run quickstart "${drop[@]}" run.output_dir="$WORK/drop"
run 0 resume "$WORK/drop/checkpoint-4" run.output_dir="$WORK/drop-resumed"
check "GPU resume with dropout: losses 5-8" close drop drop-resumed 5 8 1e-6
run 0 run quickstart "${drop[@]}" run.seed=7 run.output_dir="$WORK/drop-seed7"
check_py seeds-differ "$WORK/drop/metrics.jsonl" "$WORK/drop-seed7/metrics.jsonl" && ok \
  || fail "another seed gave the same dropout (the check above would prove nothing)"

# --- zero3 with cpu_offload in one process: units gathered on the GPU, the update on pinned CPU masters
# (a checkpoint at step 4: the save hands rank 0 host copies of the units and must leave the
# gradient hooks working for steps 5-8)
run 0 run quickstart "${gpu[@]}" distributed.strategy=zero3 distributed.cpu_offload=true \
  model.activation_checkpointing=true checkpoint.every_steps=4 run.output_dir="$WORK/z3-offload"
has "memory on rank 0 (zero3, 1 ranks" err && has "in CPU memory (distributed.cpu_offload)" err
check "zero3 + cpu_offload on the GPU vs a plain GPU run: losses" close fp32 z3-offload 1 8 1e-5
check "zero3 + cpu_offload on the GPU vs a plain GPU run: weights" same_weights fp32 z3-offload 1e-5

# --- a BERT classifier on the GPU
bert=(model.arch=bert model.n_layer=2 model.n_head=2 model.d_model=32 model.max_seq_len=64 data.seq_len=64
      data.train="$SRC/recipes/data/reviews_example.csv" data.validation_fraction=0.2 tokenizer.type=hf
      tokenizer.path="$SRC/tests/fixtures/data/hf_bert_tokenizer.json" model.vocab_size=900 trainer.max_steps=60
      trainer.eval_every=60 trainer.log_every=10 optimizer.lr=0.003 scheduler.warmup_steps=2 "data.exclude=[]"
      "data.separator=''" trainer.micro_batch_size=8)
run 0 run quickstart "${bert[@]}" trainer.device=cuda trainer.precision=bf16 run.output_dir="$WORK/bert"
has "eval_accuracy" err

# --- ModernBERT and DeBERTa-v2 classifiers: fp32 on the GPU equals fp32 on the CPU step by step
# (unpadded ModernBERT, disentangled attention, log-bucket positions on CUDA kernels), and bf16 trains
for enc in modernbert deberta-v2; do
  short=(model.encoder=$enc trainer.max_steps=12 trainer.log_every=1 trainer.eval_every=12)
  run 0 run quickstart "${bert[@]}" "${short[@]}" trainer.device=cpu run.output_dir="$WORK/$enc-cpu"
  run 0 run quickstart "${bert[@]}" "${short[@]}" trainer.device=cuda run.output_dir="$WORK/$enc-cuda"
  check "$enc fp32 on cuda vs the CPU: losses" close $enc-cpu $enc-cuda 1 12 1e-4
  run 0 run quickstart "${bert[@]}" "${short[@]}" trainer.device=cuda trainer.precision=bf16 \
    run.output_dir="$WORK/$enc-bf16"
  check "$enc bf16 on cuda vs fp32: losses" close $enc-cpu $enc-bf16 1 12 5e-2
done

# --- generate on the GPU: greedy text equals the CPU's (a model trained 40 steps, so that its
# predictions are not near-ties)
run 0 generate "$WORK/bf16-long/final" --prompt "The cat" --greedy --max-new-tokens 24 --device cpu && on_cpu=$out
run 0 generate "$WORK/bf16-long/final" --prompt "The cat" --greedy --max-new-tokens 24 --device cuda
[ "$out" = "$on_cpu" ] && ok || fail "generate on cuda gave '$out', on the CPU '$on_cpu'"
echo "  greedy text: $out"
run 0 generate "$WORK/fp32/final" --prompt "The cat" --max-new-tokens 24 --seed 3 --device cuda && first=$out
run 0 generate "$WORK/fp32/final" --prompt "The cat" --max-new-tokens 24 --seed 3 --device cuda
[ "$out" = "$first" ] && ok || fail "the same seed on cuda gave different text"
finish
