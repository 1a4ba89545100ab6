"""hftrain's training speed next to its peers', on the same model, data, batch and optimizer.

    bench/peers.sh [cpu|gpu] [SHAPE ...] [--rounds 3] [--threads N] [--steps 10] [--warmup 3]

Contenders: hftrain (build/apps/hftrain/hftrain), a plain PyTorch eager loop (bench/peer_eager.py)
and the Hugging Face Trainer (bench/peer_hf_trainer.py). All three start from the weights of one
Hugging Face directory made here with transformers (model.from for hftrain) and read one shard of
random token ids (the cost of a step does not depend on them). Runs are interleaved, A B C A B C,
`--rounds` times, each with the same thread count (OMP_NUM_THREADS and torch.set_num_threads).

Per contender it prints: tokens/s (median over every timed step of every round, and the range of
the rounds' medians), the ratio to hftrain, peak memory (peak RSS on the CPU, from getrusage;
the CUDA allocator's peak on a GPU), start-up (process start to the first step's start, median),
and MFU: FLOPs per token (PaLM: 6N + 12 L H Q T, with N the non-embedding parameters plus the
output layer, which at a 50257 vocabulary is most of the work) times tokens/s over the peak this
script measures (a large fp32 matmul at the same thread count on the CPU; the bf16 dense table on a
GPU). With --json FILE it also writes every figure.
"""
import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# vocab 50257 (GPT-2's); the small shapes: 4 layers, d_model 256, seq 256, micro-batch 8.
SHAPES = {
    "gpt2-small": dict(arch="gpt2", n_layer=4, n_head=4, n_kv_head=4, d_model=256, d_ff=1024, seq=256, batch=8),
    "llama-small": dict(arch="llama", n_layer=4, n_head=4, n_kv_head=2, d_model=256, d_ff=688, seq=256, batch=8),
    "gpt2-124m": dict(arch="gpt2", n_layer=12, n_head=12, n_kv_head=12, d_model=768, d_ff=3072, seq=128, batch=8),
    "gpt2-124m-1024": dict(arch="gpt2", n_layer=12, n_head=12, n_kv_head=12, d_model=768, d_ff=3072, seq=1024,
                           batch=16),
    # A Qwen3-MoE of the small shapes' size: 8 experts of 256 per layer, 2 per token (the eager
    # peer has no mixture of experts: hftrain against transformers under its Trainer).
    "qwen3-moe-small": dict(arch="qwen3_moe", n_layer=4, n_head=4, n_kv_head=2, d_model=256, d_ff=688, seq=256,
                            batch=8, n_experts=8, top_k=2, expert_d_ff=256),
}
# Contenders that cannot build a shape's architecture.
UNSUPPORTED = {"qwen3_moe": {"pytorch eager"}}
VOCAB = 50257
DEFAULT_SHAPES = {"cpu": ["gpt2-small", "llama-small"], "gpu": ["gpt2-124m-1024"]}
GPU_BF16_PEAK = {"H100": 989.4e12, "H200": 989.4e12, "A100": 312e12, "L40S": 362.05e12, "A10": 125e12}


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def make_model_dir(py, shape, path):
    """A randomly initialised transformers model of the shape, saved as safetensors."""
    s = SHAPES[shape]
    code = f"""
import torch, transformers as t
torch.manual_seed(0)
if {s['arch']!r} == 'qwen3_moe':
    c = t.Qwen3MoeConfig(vocab_size={VOCAB}, hidden_size={s['d_model']}, intermediate_size={s['d_ff']},
                         num_hidden_layers={s['n_layer']}, num_attention_heads={s['n_head']},
                         num_key_value_heads={s['n_kv_head']}, head_dim={s['d_model'] // s['n_head']},
                         max_position_embeddings={s['seq']}, rms_norm_eps=1e-5, tie_word_embeddings=False,
                         num_experts={s.get('n_experts', 0)}, num_experts_per_tok={s.get('top_k', 0)},
                         moe_intermediate_size={s.get('expert_d_ff', 0)}, norm_topk_prob=True)
    m = t.Qwen3MoeForCausalLM(c)
elif {s['arch']!r} == 'gpt2':
    c = t.GPT2Config(vocab_size={VOCAB}, n_positions={s['seq']}, n_embd={s['d_model']}, n_layer={s['n_layer']},
                     n_head={s['n_head']}, n_inner={s['d_ff']}, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    m = t.GPT2LMHeadModel(c)
else:
    c = t.LlamaConfig(vocab_size={VOCAB}, hidden_size={s['d_model']}, intermediate_size={s['d_ff']},
                      num_hidden_layers={s['n_layer']}, num_attention_heads={s['n_head']},
                      num_key_value_heads={s['n_kv_head']}, max_position_embeddings={s['seq']},
                      rms_norm_eps=1e-5, tie_word_embeddings=False)
    m = t.LlamaForCausalLM(c)
m.save_pretrained({path!r})
# A byte-level BPE tokenizer.json of exactly this vocabulary (256 bytes, merges of byte pairs,
# <|endoftext|>), so that hftrain accepts every id of the shard; the peers need no tokenizer.
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from tokenizers.pre_tokenizers import ByteLevel
chars = sorted(ByteLevel.alphabet())
vocab = {{c: i for i, c in enumerate(chars)}}
merges = []
for a in chars:
    for b in chars:
        if len(vocab) == {VOCAB} - 1:
            break
        vocab[a + b] = len(vocab)
        merges.append((a, b))
tok = Tokenizer(models.BPE(vocab, merges))
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.decoder = decoders.ByteLevel()
tok.add_special_tokens(["<|endoftext|>"])
tok.save({path!r} + "/tokenizer.json")
"""
    sh([py, "-c", code])


def make_shard(py, path, tokens):
    sh([py, "-c", f"import torch; torch.manual_seed(1); "
                  f"torch.randint(0, {VOCAB}, ({tokens},), dtype=torch.int32).to(torch.uint16).numpy()"
                  f".tofile({path!r})"])


def measure_peak(py, device, threads):
    if device == "gpu":
        name = sh([py, "-c", "import torch; print(torch.cuda.get_device_name())"]).strip()
        peak = next((v for k, v in GPU_BF16_PEAK.items() if k in name), None)
        return name, peak, "bf16 dense (table)"
    code = f"""
import time, torch
torch.set_num_threads({threads})
a, b = torch.randn(4096, 4096), torch.randn(4096, 4096)
for _ in range(2): a @ b
best = 0
for _ in range(10):
    t = time.perf_counter(); a @ b; dt = time.perf_counter() - t
    best = max(best, 2 * 4096 ** 3 / dt)
print(best)
"""
    return cpu_name(), float(sh([py, "-c", code])), f"fp32 4096^3 matmul, {threads} threads"


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            return re.search(r"model name\s*:\s*(.*)", f.read()).group(1).strip()
    except (OSError, AttributeError):
        return platform.processor() or "cpu"


def flops_per_token(shape):
    s = SHAPES[shape]
    d, layers, hd = s["d_model"], s["n_layer"], s["d_model"] // s["n_head"]
    if s["arch"] == "gpt2":
        block = 4 * d * d + 4 * d + 2 * d * s["d_ff"] + s["d_ff"] + d + 4 * d  # attn, mlp, 2 norms
    elif s["arch"] == "qwen3_moe":  # the experts a token passes through, the router, q/k norms
        block = (2 * d * d + 2 * d * s["n_kv_head"] * hd + 3 * d * s["expert_d_ff"] * s["top_k"] +
                 d * s["n_experts"] + 2 * d + 2 * hd)
    else:
        block = 2 * d * d + 2 * d * s["n_kv_head"] * hd + 3 * d * s["d_ff"] + 2 * d
    n = layers * block + VOCAB * d  # blocks plus the output layer (a matmul, unlike the embeddings)
    return 6 * n + 12 * layers * s["n_head"] * hd * s["seq"]


# Runs argv[1:] and reports its peak RSS (kB) on stderr: getrusage of this wrapper's children is
# exactly the one command's, with no external `time` program needed.
RSS_WRAPPER = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:]); "
               "sys.stderr.write('MAXRSS %d\\n' % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); "
               "sys.exit(r.returncode)")


def timed(cmd, env, python):
    """Runs cmd; returns (stdout, launch wall time, max RSS in MiB)."""
    launch = time.time()
    p = subprocess.run([python, "-c", RSS_WRAPPER] + cmd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd[:3])} failed:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    rss = re.findall(r"MAXRSS (\d+)", p.stderr)
    return p.stdout, launch, int(rss[-1]) / 1024 if rss else None


def run_hftrain(args, shape, work, model_dir, shard, env, rnd):
    s = SHAPES[shape]
    out = os.path.join(work, f"hftrain-{shape}-{rnd}")
    gpu = args.device == "gpu"
    recipe = os.path.join(work, "peers.yaml")
    with open(recipe, "w") as f:
        f.write("# The hftrain side of bench/peers.py: everything else comes from the overrides.\nrun:\n  name: peers\n")
    cmd = [args.hftrain, "run", recipe,
           f"model.from={model_dir}", "model.dropout=0",
           f"data.train=[{shard}]", "data.format=tokens", "data.token_dtype=uint16", "data.validation=[]",
           "data.validation_fraction=0", "data.exclude=[]", f"data.seq_len={s['seq']}",
           f"trainer.micro_batch_size={s['batch']}", "trainer.grad_accum_steps=1", "trainer.max_grad_norm=1.0",
           f"trainer.max_steps={args.warmup + args.steps}", "trainer.max_tokens=null", "trainer.log_every=1",
           "trainer.eval_every=0", f"trainer.device={'cuda' if gpu else 'cpu'}",
           f"trainer.precision={'bf16' if gpu else 'fp32'}", f"trainer.tf32={'true' if gpu else 'false'}",
           "optimizer.name=adamw", "optimizer.lr=6e-4", "optimizer.weight_decay=0.1", "optimizer.beta1=0.9",
           "optimizer.beta2=0.95", "scheduler.name=cosine", "scheduler.warmup_steps=2", "checkpoint.at_end=false",
           "checkpoint.every_steps=0", f"run.output_dir={out}", f"data.cache_dir={work}/cache"]
    _, launch, rss = timed(cmd, env, args.python)
    records = [json.loads(line) for line in open(os.path.join(out, "metrics.jsonl"))]
    steps = [r for r in records if r.get("type") == "train"]
    times = [r["time"] for r in steps]
    step_seconds = [b - a for a, b in zip(times[args.warmup - 1:], times[args.warmup:])]
    first_start = steps[0]["time"] - steps[0]["step_time_ms"] / 1000
    peak = steps[-1].get("peak_mem_mb") if gpu else rss
    return dict(step_seconds=step_seconds, startup_s=first_start - launch, peak_mem_mb=peak,
                last_loss=steps[-1]["loss"])


def run_python_peer(args, script, shape, model_dir, shard, env):
    s = SHAPES[shape]
    gpu = args.device == "gpu"
    cmd = [args.python, os.path.join(ROOT, "bench", script), "--shard", shard, "--model-dir", model_dir,
           "--seq", str(s["seq"]), "--micro-batch", str(s["batch"]), "--warmup-steps", str(args.warmup),
           "--steps", str(args.steps), "--device", "cuda" if gpu else "cpu", "--threads", str(args.threads)]
    out, launch, rss = timed(cmd, env, args.python)
    r = json.loads(out.strip().splitlines()[-1])
    return dict(step_seconds=r["step_seconds"], startup_s=r["first_step_start"] - launch,
                peak_mem_mb=r["peak_mem_mb"] if gpu else rss, last_loss=r["last_loss"])


CONTENDERS = {
    "hftrain": lambda a, sh_, w, m, d, e, r: run_hftrain(a, sh_, w, m, d, e, r),
    "pytorch eager": lambda a, sh_, w, m, d, e, r: run_python_peer(a, "peer_eager.py", sh_, m, d, e),
    "hf trainer": lambda a, sh_, w, m, d, e, r: run_python_peer(a, "peer_hf_trainer.py", sh_, m, d, e),
}


def summarise(shape, runs, peak_flops):
    tokens_per_step = SHAPES[shape]["batch"] * SHAPES[shape]["seq"]
    rows = {}
    for name, rounds in runs.items():
        pooled = [t for r in rounds for t in r["step_seconds"]]
        round_medians = [tokens_per_step / statistics.median(r["step_seconds"]) for r in rounds]
        tps = tokens_per_step / statistics.median(pooled)
        rows[name] = dict(tokens_per_s=tps, round_min=min(round_medians), round_max=max(round_medians),
                          peak_mem_mb=statistics.median(r["peak_mem_mb"] for r in rounds),
                          startup_s=statistics.median(r["startup_s"] for r in rounds),
                          mfu=tps * flops_per_token(shape) / peak_flops if peak_flops else None,
                          last_loss=[r["last_loss"] for r in rounds])
    base = rows["hftrain"]["tokens_per_s"]
    for r in rows.values():
        r["vs_hftrain"] = r["tokens_per_s"] / base
    return rows


def print_table(shape, rows, mem_label, peak, peak_how):
    s = SHAPES[shape]
    print(f"\n{shape}: {s['arch']}, {s['n_layer']} layers, d_model {s['d_model']}, seq {s['seq']}, micro-batch "
          f"{s['batch']}, vocab {VOCAB}; MFU against "
          + (f"{peak / 1e9:.0f} GFLOP/s ({peak_how}, best seen)" if peak else "an unknown peak"))
    print(f"| contender | tokens/s (median) | rounds' range | x hftrain | {mem_label} | start-up | MFU |")
    print("|---|---|---|---|---|---|---|")
    for name, r in rows.items():
        mfu = f"{100 * r['mfu']:.1f}%" if r["mfu"] is not None else "n/a"
        print(f"| {name} | {r['tokens_per_s']:.0f} | {r['round_min']:.0f}-{r['round_max']:.0f} | "
              f"{r['vs_hftrain']:.2f} | {r['peak_mem_mb'] / 1024:.2f} GiB | {r['startup_s']:.2f} s | {mfu} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("device", nargs="?", choices=["cpu", "gpu"], default="cpu")
    ap.add_argument("shapes", nargs="*", help=f"of {', '.join(SHAPES)}")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--steps", type=int, default=10, help="timed steps per run")
    ap.add_argument("--warmup", type=int, default=3, help="untimed steps before them")
    ap.add_argument("--only", help="comma-separated contenders (default: all)")
    ap.add_argument("--hftrain", default=os.path.join(ROOT, "build", "apps", "hftrain", "hftrain"))
    ap.add_argument("--python", default=os.path.join(ROOT, ".venv", "bin", "python"))
    ap.add_argument("--json", help="write every figure here")
    args = ap.parse_args()
    shapes = args.shapes or DEFAULT_SHAPES[args.device]
    for s in shapes:
        if s not in SHAPES:
            sys.exit(f"unknown shape '{s}'; one of {', '.join(SHAPES)}")
    if not os.access(args.hftrain, os.X_OK):
        sys.exit(f"{args.hftrain} is missing: build first (./scripts/setup.sh)")
    contenders = args.only.split(",") if args.only else list(CONTENDERS)
    if "hftrain" not in contenders:
        contenders.insert(0, "hftrain")
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), MKL_NUM_THREADS=str(args.threads),
               HFTRAIN_RECIPES_DIR=os.path.join(ROOT, "recipes"), TOKENIZERS_PARALLELISM="false")
    device_name, peak, peak_how = measure_peak(args.python, args.device, args.threads)
    commit = sh(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"]).strip()
    print(f"machine: {device_name}; {args.threads} threads; commit {commit}; {args.rounds} rounds x {args.steps} "
          f"timed steps after {args.warmup}")
    results = {}
    with tempfile.TemporaryDirectory() as work:
        for shape in shapes:
            model_dir, shard = os.path.join(work, shape), os.path.join(work, f"{shape}.bin")
            make_model_dir(args.python, shape, model_dir)
            s = SHAPES[shape]
            make_shard(args.python, shard, 4 * (args.warmup + args.steps) * s["batch"] * (s["seq"] + 1) + 1024)
            runs = {name: [] for name in contenders if name not in UNSUPPORTED.get(s["arch"], ())}
            for rnd in range(args.rounds):
                for name in runs:
                    runs[name].append(CONTENDERS[name](args, shape, work, model_dir, shard, env, rnd))
            if args.device == "cpu":  # a shared machine's peak varies: the best seen in the session
                peak = max(peak, measure_peak(args.python, args.device, args.threads)[1])
            rows = summarise(shape, runs, peak)
            print_table(shape, rows, "peak device memory" if args.device == "gpu" else "peak RSS", peak, peak_how)
            results[shape] = dict(rows=rows, runs=runs)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(machine=device_name, threads=args.threads, peak_flops=peak, commit=commit,
                           results=results), f, indent=1)


if __name__ == "__main__":
    main()
