#!/usr/bin/env bash
# One short GPU window that decides something (issue 38): prices the levers in PyTorch alone, runs
# the [gpu] tests, measures hftrain's variants against the plain PyTorch loop interleaved in one
# call, and profiles the default variant with its kernel time bucketed per step. Every phase writes
# its files under OUT as it ends, and a line into OUT/summary.txt, so a window cut short keeps what
# it measured. The device tool brings back at most 8 files: OUT gets summary.txt (the device, each
# phase's verdict, the tail of any failed run's log), probe.txt, tests.log, ab.txt, llama.txt,
# buckets.txt, ops-hftrain.tsv and determinism.txt; every other log stays on the machine.
#
# Here (no GPU), before the window: pack the binaries built here with their shared libraries, to
# carry to the device (the device tool's `carry: ["gpu-carry"]`; under its 64 MiB):
#   scripts/gpu-window.sh --pack
# There (PyTorch 2.11 with CUDA 13 installed, no network), in two calls (one command may run 600 s):
#   bash scripts/gpu-window.sh "$OUT" device probe tests ab     (about 7 minutes)
#   bash scripts/gpu-window.sh "$OUT" llama profile determinism (about 5 minutes)
#   bash scripts/gpu-window.sh "$OUT" checkpoint                (about 2 minutes, when time is left)
# Phases (default: all, in this order):
#   device   the card, driver, torch and CUDA versions, the commit (into summary.txt)
#   probe    bench/gpu_probe.py: residual adds, norms, SDPA backends, fp32-output mm, fp8 (PyTorch only)
#   tests    the [gpu] unit tests of test_train (the no-sync test among them), test_optim and
#            test_model (the fused classifier kernel against its composite, once more under
#            compute-sanitizer memcheck; the output layer's fp32-output products)
#   ab       GPT-2 124M, micro-batch 16 x 1024, bf16: the eager peer (autocast, then bf16 weights with
#            fp32 masters) and hftrain's variants, two interleaved rounds, 30 steps each, the median
#            of the last windows; OUT/ab.txt: the rows, then one table
#   llama    the same for the Llama-style 1.1B shape (micro-batch 4 x 1024), one round
#   determinism  trainer.deterministic on CUDA: two runs with it give the same bits, two without
#            may not (OUT/determinism.txt)
#   checkpoint  bench/checkpoint_stall.sh on the GPU: a save's stall at once and in the background
#            (checkpoint.async, pinned host buffers), into summary.txt
#   profile  hftrain's default under the profiler (steps 11-13): OUT/ops-hftrain.tsv and
#            bench/kernel_buckets.py's table in OUT/buckets.txt (matmul, attention, norm, add/copy/cast, head, optimizer,
#            GPU idle)
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
carry=$root/gpu-carry
py=${HFTRAIN_PYTHON:-python3}

if [ "${1:-}" = "--pack" ]; then
  build=${HFTRAIN_BUILD_DIR:-$root/build}
  rm -rf "$carry" && mkdir -p "$carry/bin" "$carry/lib"
  for b in apps/hftrain/hftrain tests/train/test_train tests/optim/test_optim tests/model/test_model; do
    [ -x "$build/$b" ] || { echo "gpu-window.sh: $build/$b is not built" >&2; exit 2; }
    strip -o "$carry/bin/$(basename "$b")" "$build/$b"
  done
  # Every shared library the binaries load from outside the torch wheel and glibc: yaml-cpp, spdlog,
  # fmt, PCRE2, Open MPI, curl and what they need. The device brings torch, CUDA and NCCL itself.
  ldd "$carry"/bin/* | awk '/=> \// {print $3}' | sort -u \
    | grep -v -E '/(torch|nvidia)/|/lib(c|m|dl|rt|pthread|resolv)\.so|ld-linux|libgcc_s|libcudart|libcuda\.so' \
    | while read -r lib; do cp -L "$lib" "$carry/lib/"; done
  du -sh "$carry"
  size=$(du -sm "$carry" | cut -f1)
  [ "$size" -lt 64 ] || { echo "gpu-window.sh: gpu-carry is ${size} MiB, over the 64 MiB the device tool carries" >&2; exit 1; }
  exit 0
fi

out=$(mkdir -p "${1:?usage: gpu-window.sh OUT [PHASE...] | --pack}" && cd "$1" && pwd)
shift
phases=("$@")
[ ${#phases[@]} -gt 0 ] || phases=(device probe tests ab llama profile)
summary() { echo "$*" | tee -a "$out/summary.txt"; }

# The binaries: carried (with the device's own torch, CUDA and NCCL libraries), else built here.
torch_lib=$("$py" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))' 2>/dev/null)
nvidia_libs=$("$py" -c 'import glob, os, torch; d = os.path.dirname(os.path.dirname(torch.__file__)); print(":".join(sorted(glob.glob(os.path.join(d, "nvidia", "*", "lib")))))' 2>/dev/null)
if [ -x "$carry/bin/hftrain" ]; then
  bin=$carry/bin
  export LD_LIBRARY_PATH=$carry/lib:$torch_lib:$nvidia_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
else
  build=${HFTRAIN_BUILD_DIR:-$root/build}
  bin=$build/bin-links && mkdir -p "$bin"
  ln -sf "$build/apps/hftrain/hftrain" "$bin/hftrain"
  ln -sf "$build/tests/train/test_train" "$bin/test_train"
  ln -sf "$build/tests/optim/test_optim" "$bin/test_optim"
  ln -sf "$build/tests/model/test_model" "$bin/test_model"
fi
hftrain=$bin/hftrain
export HFTRAIN_RECIPES_DIR=$root/recipes
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
logs=$work/logs && mkdir -p "$logs"
failed() {  # failed LABEL: the row, and the log's tail into the summary
  echo "$1	failed"
  { echo "--- $1 failed; the end of its log:"; tail -15 "$logs/$1.log"; } >>"$out/summary.txt"
}
export HFTRAIN_CACHE_DIR=$work/cache

shard=$work/train.bin
"$py" -c "import torch; torch.manual_seed(0); torch.randint(0, 256, (40_000_000,), dtype=torch.int16).numpy().tofile('$shard')"

# hftrain_run LABEL SHAPE ARGS...: 30 steps; prints ms, tokens/s, peak MiB, loss (median of the
# step_time_ms of the windows after step 10: the last 20 steps)
gpt2_shape=(model.arch=gpt2 model.n_layer=12 model.n_head=12 model.d_model=768 model.vocab_size=50304
            trainer.micro_batch_size=16)
llama_shape=(model.arch=llama model.n_layer=16 model.n_head=32 model.n_kv_head=8 model.d_model=2048 model.d_ff=8192
             model.vocab_size=32000 model.tie_embeddings=false model.rope_theta=500000 trainer.micro_batch_size=4)
hftrain_run() {
  local label=$1; shift
  local dir=$work/run-$RANDOM
  "$hftrain" run gpt2-124m "data.train=[$shard]" "data.validation=[]" data.validation_fraction=0 tokenizer.type=byte \
    model.max_seq_len=1024 data.seq_len=1024 trainer.grad_accum_steps=1 trainer.max_tokens=null trainer.max_steps=30 \
    trainer.log_every=5 trainer.eval_every=0 scheduler.warmup_steps=5 checkpoint.at_end=false \
    checkpoint.every_steps=0 trainer.device=cuda run.output_dir="$dir" "$@" >"$logs/$label.log" 2>&1 \
    || { failed "$label"; return; }
  "$py" - "$label" "$dir/metrics.jsonl" <<'PY'
import json, statistics, sys
rs = [r for r in map(json.loads, open(sys.argv[2])) if r.get("type") == "train" and r["step"] > 10]
ms = statistics.median(r["step_time_ms"] for r in rs)
print(f"{sys.argv[1]}\t{ms:.2f}\t{rs[-1]['tokens_per_s']:.0f}\t{rs[-1]['peak_mem_mb']:.0f}\t{rs[-1]['loss']:.4f}")
PY
}
peer_run() {  # peer_run LABEL ARGS...
  local label=$1; shift
  "$py" "$root/bench/peer_eager.py" --shard "$shard" --warmup-steps 10 --steps 20 "$@" >"$logs/$label.json" \
    2>"$logs/$label.log" || { failed "$label"; return; }
  "$py" -c "
import json, sys
r = json.load(open('$logs/$label.json'))
print(f\"$label\t{r['step_time_ms']:.2f}\t{r['tokens_per_s']:.0f}\t{r['peak_mem_mb']:.0f}\t{r['last_loss']:.4f}\")"
}
table() {  # table TSV: each variant's best round, x the first peer row's tokens/s
  "$py" - "$1" <<'PY'
import sys
best = {}
for line in open(sys.argv[1]):
    f = line.rstrip("\n").split("\t")
    if len(f) < 5:
        print("  ".join(f)); continue
    ms = float(f[1])
    if f[0] not in best or ms < best[f[0]][0]:
        best[f[0]] = (ms, float(f[2]), f[3], f[4])
peer = next((v for k, v in best.items() if k.startswith("peer")), None)
print(f"{'variant':<34} {'ms/step':>8} {'tokens/s':>10} {'x peer':>7} {'peak MiB':>9} {'loss':>8}")
for k, (ms, tps, mem, loss) in best.items():
    x = f"{peer[0] / ms:.3f}" if peer else "-"
    print(f"{k:<34} {ms:8.2f} {tps:10.0f} {x:>7} {mem:>9} {loss:>8}")
PY
}
has_key() { "$hftrain" config --schema 2>/dev/null | grep -q "$1"; }

for phase in "${phases[@]}"; do
  start=$SECONDS
  case $phase in
    device)
      summary "device   $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1); $("$py" -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda)' 2>&1); $("$hftrain" --version 2>&1 | head -1); commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')"
      ;;
    probe)
      "$py" "$root/bench/gpu_probe.py" --json "$logs/probe.json" >"$out/probe.txt" 2>&1
      summary "probe    exit $? ($((SECONDS - start)) s): probe.txt"
      cat "$out/probe.txt"
      ;;
    tests)
      (
        code=0
        for t in test_train test_optim test_model; do "$bin/$t" "[gpu]" || code=1; done
        # The project's own kernels once under the memory checker.
        sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
        if [ -x "$sanitizer" ]; then
          "$sanitizer" --tool memcheck --error-exitcode 3 "$bin/test_model" "[fused_classifier][gpu]" || code=1
        else
          echo "compute-sanitizer not found: the kernels ran without the memory checker"
        fi
        exit $code
      ) >"$out/tests.log" 2>&1
      summary "tests    exit $? ($((SECONDS - start)) s): $(grep -E 'test cases|All tests|ERROR SUMMARY' "$out/tests.log" | tr '\n' ' ')"
      ;;
    ab | llama)
      tsv=$logs/$phase.tsv
      : >"$tsv"
      if [ "$phase" = ab ]; then shape=("${gpt2_shape[@]}"); peer=(--micro-batch 16); rounds=2
      else shape=("${llama_shape[@]}"); peer=(--preset llama-1b --micro-batch 4); rounds=1; fi
      for round in $(seq 1 $rounds); do
        peer_run "peer eager (autocast)" "${peer[@]}" | tee -a "$tsv"
        hftrain_run "hftrain" "${shape[@]}" | tee -a "$tsv"
        # the host read of each step's verdict, as the default did before the device judged it
        hftrain_run "hftrain, verdict read each step" "${shape[@]}" trainer.spike.factor=1e30 | tee -a "$tsv"
        peer_run "peer eager (bf16 + fp32 masters)" "${peer[@]}" --param-dtype bf16 | tee -a "$tsv"
        HFTRAIN_FUSED_CLASSIFIER=1 hftrain_run "hftrain, fused classifier" "${shape[@]}" | tee -a "$tsv"
        HFTRAIN_SDPA_BACKEND=cudnn hftrain_run "hftrain, cuDNN attention first" "${shape[@]}" | tee -a "$tsv"
        if has_key trainer.param_dtype; then
          hftrain_run "hftrain, param_dtype=bf16" "${shape[@]}" trainer.param_dtype=bf16 | tee -a "$tsv"
          HFTRAIN_FUSED_CLASSIFIER=1 hftrain_run "hftrain, param_dtype=bf16 + fused classifier" "${shape[@]}" \
            trainer.param_dtype=bf16 | tee -a "$tsv"
        fi
      done
      { cat "$tsv"; echo; table "$tsv"; } >"$out/$phase.txt"
      tail -8 "$out/$phase.txt"
      summary "$phase       ($((SECONDS - start)) s): $phase.txt"
      ;;
    profile)
      HFTRAIN_PROFILE=$logs/profile HFTRAIN_PROFILE_STEPS=11:13 hftrain_run "hftrain, profiled" "${gpt2_shape[@]}" \
        trainer.max_steps=14 >/dev/null
      cp "$logs/profile/ops-rank0.tsv" "$out/ops-hftrain.tsv" 2>/dev/null
      "$py" "$root/bench/kernel_buckets.py" "$logs/profile/trace-rank0.json" 3 >"$out/buckets.txt" 2>&1
      cat "$out/buckets.txt"
      summary "profile  ($((SECONDS - start)) s): buckets.txt, ops-hftrain.tsv"
      ;;
    determinism)
      # trainer.deterministic on CUDA (issue 42): a small GPT-2 in bf16, twice with the setting (the
      # same bits expected: losses and weights) and twice without (what the setting buys)
      for mode in det-a det-b free-a free-b; do
        det=true; [ "${mode%-?}" = free ] && det=false
        "$hftrain" run gpt2-124m "data.train=[$shard]" "data.validation=[]" data.validation_fraction=0 \
          tokenizer.type=byte model.n_layer=4 model.max_seq_len=512 data.seq_len=512 trainer.micro_batch_size=8 \
          trainer.grad_accum_steps=1 trainer.max_tokens=null trainer.max_steps=20 trainer.log_every=1 \
          trainer.eval_every=0 model.dropout=0.1 trainer.precision=bf16 trainer.deterministic=$det \
          checkpoint.every_steps=0 trainer.device=cuda run.output_dir="$work/$mode" >"$logs/$mode.log" 2>&1 \
          || failed "$mode"
      done
      "$py" - "$work" >"$out/determinism.txt" 2>&1 <<'PY'
import hashlib, json, sys
w = sys.argv[1]
def run(m):
    losses = [(r["step"], r["loss"], r["grad_norm"]) for r in map(json.loads, open(f"{w}/{m}/metrics.jsonl"))
              if r.get("type") == "train"]
    return losses, hashlib.sha256(open(f"{w}/{m}/final/model.safetensors", "rb").read()).hexdigest()[:16]
for a, b in (("det-a", "det-b"), ("free-a", "free-b")):
    (la, wa), (lb, wb) = run(a), run(b)
    first = next((x[0] for x, y in zip(la, lb) if x != y), None)
    print(f"{a} vs {b}: histories {'identical' if first is None else f'differ from step {first}'}, "
          f"weights {'identical' if wa == wb else 'differ'} ({wa} / {wb})")
PY
      cat "$out/determinism.txt"
      summary "determinism ($((SECONDS - start)) s): $(tr '\n' ' ' <"$out/determinism.txt")"
      ;;
    checkpoint)
      # checkpoint.async on CUDA (issue 43): the stall of a save written at once and of a background
      # one (pinned host buffers), against PyTorch's copy of the same bytes into pinned memory; into
      # summary.txt (the tool brings back 8 files)
      bash "$root/bench/checkpoint_stall.sh" "$hftrain" "$py" cuda >"$logs/checkpoint.log" 2>&1 || failed checkpoint
      cat "$logs/checkpoint.log"
      summary "checkpoint ($((SECONDS - start)) s): $(tr '\n' ' ' <"$logs/checkpoint.log")"
      ;;
    *) echo "gpu-window.sh: unknown phase '$phase' (device probe tests ab llama profile determinism checkpoint)" >&2
       exit 2 ;;
  esac
done
cat "$out/summary.txt"
