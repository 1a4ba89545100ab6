"""A GPU step's extra passes, counted on the CPU: how many casts, same-dtype copies and mixed-dtype
elementwise operators one bf16 training step runs, and the bytes they write, for hftrain and for the
plain PyTorch loop (bench/peer_eager.py's model, bf16 autocast on the CPU), from the profiler's traces
with input shapes and dtypes. Time on the CPU says little about a GPU, but these passes are memory
traffic on any device: a change that adds some shows here before a GPU window sees it (issue 38).

hftrain runs under HFTRAIN_PROFILE (train/report/profiler_callback.h) for steps 3-4; the peer under
torch.profiler for two steps after two untimed ones. Counted per step, at the leaves (aten::copy_,
not the aten::to / _to_copy that wrap it):
  casts       copy_ between two dtypes (autocast's weight and activation casts, .float() of logits)
  copies      copy_ within one dtype (cat, contiguous, clones)
  mixed       elementwise add/sub/mul/div/addcmul/where... whose float inputs differ in dtype
Usage: python bench/cast_census.py path/to/hftrain [--param-dtype fp32|bf16] [--json OUT]
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile

import torch

DTYPE_BYTES = {"float": 4, "c10::BFloat16": 2, "c10::Half": 2, "double": 8, "long int": 8, "int": 4,
               "bool": 1, "signed char": 1, "unsigned char": 1, "short int": 2}
FLOATS = {"float", "c10::BFloat16", "c10::Half", "double"}
ELEMENTWISE = {"aten::add", "aten::add_", "aten::sub", "aten::sub_", "aten::mul", "aten::mul_", "aten::div",
               "aten::div_", "aten::addcmul_", "aten::addcdiv_", "aten::where", "aten::lerp_"}
SHAPE = dict(layers=4, heads=4, d_model=256, vocab=50257, seq=256, micro=4)


def numel(dims):
    n = 1
    for d in dims:
        n *= d
    return n


def census(trace_path, steps, detail=None):
    """Per-step counts and bytes from a Kineto trace with input shapes; `detail` (a Counter), when
    given, collects the bytes per (kind, dtypes, shape) for --detail."""
    with open(trace_path) as f:
        events = json.load(f)["traceEvents"]
    counts = collections.Counter()
    written = collections.Counter()
    for e in events:
        if e.get("ph") != "X" or e.get("cat") != "cpu_op":
            continue
        args = e.get("args", {})
        dims, types = args.get("Input Dims", []), args.get("Input type", [])
        name = e["name"]
        if name == "aten::copy_" and len(types) >= 2 and dims:
            kind = "casts" if types[0] != types[1] else "copies"
            counts[kind] += 1
            written[kind] += numel(dims[0]) * DTYPE_BYTES.get(types[0], 4)
            if detail is not None:
                detail[(kind, f"{types[1]} -> {types[0]}", str(dims[0]))] += numel(dims[0]) * DTYPE_BYTES.get(types[0], 4)
        elif name in ELEMENTWISE:
            floats = {t for t in types if t in FLOATS}
            if len(floats) > 1:
                counts["mixed"] += 1
                shaped = [numel(d) for d, t in zip(dims, types) if t in FLOATS and d]
                widest = max(DTYPE_BYTES[t] for t in floats)
                written["mixed"] += (max(shaped) if shaped else 0) * widest
                if detail is not None:
                    detail[("mixed", name + " " + "/".join(types[:2]), str(dims[0] if dims else []))] += \
                        (max(shaped) if shaped else 0) * widest
    return {k: {"per_step": counts[k] / steps, "mib_per_step": written[k] / steps / 2**20}
            for k in ("casts", "copies", "mixed")}


def run_hftrain(hftrain, work, param_dtype, detail=None):
    shard = os.path.join(work, "train.bin")
    torch.manual_seed(0)
    torch.randint(0, 256, (2_000_000,), dtype=torch.int16).numpy().tofile(shard)
    profile = os.path.join(work, "profile")
    env = dict(os.environ, HFTRAIN_PROFILE=profile, HFTRAIN_PROFILE_STEPS="3:4",
               HFTRAIN_CACHE_DIR=os.path.join(work, "cache"))
    cmd = [hftrain, "run", "gpt2-124m", f"data.train=[{shard}]", "data.validation=[]", "data.validation_fraction=0",
           "tokenizer.type=byte", f"model.n_layer={SHAPE['layers']}", f"model.n_head={SHAPE['heads']}",
           f"model.d_model={SHAPE['d_model']}", f"model.vocab_size={SHAPE['vocab']}",
           f"model.max_seq_len={SHAPE['seq']}", f"data.seq_len={SHAPE['seq']}",
           f"trainer.micro_batch_size={SHAPE['micro']}", "trainer.grad_accum_steps=1", "trainer.max_tokens=null",
           "trainer.max_steps=5", "scheduler.warmup_steps=1", "trainer.log_every=5", "trainer.eval_every=0", "trainer.device=cpu",
           "trainer.precision=bf16", "checkpoint.at_end=false", "checkpoint.every_steps=0",
           f"run.output_dir={os.path.join(work, 'run')}"]
    if param_dtype != "fp32":
        cmd.append(f"trainer.param_dtype={param_dtype}")
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"cast_census.py: hftrain failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return census(os.path.join(profile, "trace-rank0.json"), steps=2, detail=detail)


def run_peer(work):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from peer_eager import Gpt  # noqa: E402  (the benchmarks' peer model)
    cfg = dict(arch="gpt2", vocab=SHAPE["vocab"], max_seq=SHAPE["seq"], n_layer=SHAPE["layers"],
               n_head=SHAPE["heads"], d_model=SHAPE["d_model"], d_ff=4 * SHAPE["d_model"], eps=1e-5)
    torch.manual_seed(0)
    model = Gpt(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=6e-4, fused=True)
    ids = torch.randint(0, 256, (SHAPE["micro"], SHAPE["seq"] + 1))

    def step():
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = model(ids[:, :-1], ids[:, 1:])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
    for _ in range(2):
        step()
    trace = os.path.join(work, "peer-trace.json")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
        for _ in range(2):
            step()
    prof.export_chrome_trace(trace)
    return census(trace, steps=2)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("hftrain")
    ap.add_argument("--param-dtype", default="fp32", help="hftrain's trainer.param_dtype (where it has the key)")
    ap.add_argument("--json")
    ap.add_argument("--detail", type=int, default=0, help="also print hftrain's N largest (kind, dtypes, shape)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as work:
        detail = collections.Counter()
        rows = {"hftrain": run_hftrain(os.path.abspath(a.hftrain), work, a.param_dtype, detail),
                "pytorch eager": run_peer(work)}
    shape = ", ".join(f"{k} {v}" for k, v in SHAPE.items())
    print(f"one bf16 training step on the CPU ({shape}): operators per step, MiB written")
    print(f"{'':<16}" + "".join(f"{k:>22}" for k in ("casts", "copies", "mixed-dtype")))
    for who, r in rows.items():
        print(f"{who:<16}" + "".join(f"{r[k]['per_step']:>10.0f} {r[k]['mib_per_step']:>8.1f} MiB"
                                     for k in ("casts", "copies", "mixed")))
    for (kind, types, shape), nbytes in detail.most_common(a.detail):
        print(f"  hftrain {kind:<7} {types:<40} {shape:<22} {nbytes / 2 / 2**20:8.1f} MiB/step")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"shape": SHAPE, "param_dtype": a.param_dtype, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
