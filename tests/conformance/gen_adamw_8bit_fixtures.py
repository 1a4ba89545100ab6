"""Emits tests/fixtures/adamw_8bit/*.safetensors, which tests/optim/test_adamw_8bit.cpp compares
hftrain's 8-bit AdamW (lib/optim/adamw_8bit.h) with:

  maps.safetensors        bitsandbytes' create_dynamic_map(signed=True) and (signed=False)
  quantize.safetensors    inputs, bitsandbytes' quantize_blockwise codes and absmax (blocks of 256
                          and 2048), its dequantize_blockwise of those, and the codes of exact
                          round-to-nearest (see below)
  trajectory.safetensors  parameters after each step of bnb.optim.AdamW8bit on the CPU, and after
                          the first and last of the same optimizer with exact round-to-nearest codes

bitsandbytes 0.50's CPU quantize_blockwise looks codes up in a 65536-bin table: for values within
about 1.5e-5 of a midpoint between two codes it picks the neighbour of the nearest code. Its CUDA
kernels (and hftrain) search the map exactly. "nearest" below is that exact rounding: x / absmax
(computed as x * (1 / absmax) in fp32, as bitsandbytes does) goes to code i when
mid[i-1] < x <= mid[i], mid = (code[:-1] + code[1:]) * 0.5 in fp32. The "nearest" trajectory is
bitsandbytes' own CPU optimizer code with only its quantizer swapped for that one.

Inputs of the trajectory are exact small rationals made by integer formulas (the C++ test builds
the same ones), so every platform starts from the same bits.

Run: .venv/bin/python tests/conformance/gen_adamw_8bit_fixtures.py
"""
import importlib.metadata
import json
import os

import bitsandbytes as bnb
import bitsandbytes.backends.cpu.ops as bnb_cpu_ops
import bitsandbytes.functional as F
import torch
from safetensors.torch import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "adamw_8bit")
SIGNED = F.create_dynamic_map(signed=True)
UNSIGNED = F.create_dynamic_map(signed=False)


def nearest_quantize(x, code, blocksize):
    """Exact round-to-nearest block-wise quantization: codes (uint8, x's shape), absmax."""
    flat = x.float().reshape(-1)
    n = flat.numel()
    blocks = -(n // -blocksize)
    padded = torch.zeros(blocks * blocksize)
    padded[:n] = flat
    rows = padded.view(blocks, blocksize)
    absmax = rows.abs().amax(1)
    normalized = (rows * absmax.reciprocal().unsqueeze(1)).clamp(-1, 1)
    mid = (code[:-1] + code[1:]) * 0.5
    idx = torch.bucketize(normalized, mid, right=False)
    idx[absmax == 0] = 0
    return idx.reshape(-1)[:n].to(torch.uint8).reshape(x.shape), absmax


def quantize_fixtures():
    torch.manual_seed(0)
    # 3000 values over eight decades (the dynamic map's range), one all-zero block of 256.
    x = torch.randn(3000) * torch.logspace(-7, 0, 3000)[torch.randperm(3000)]
    x[512:768] = 0
    x = x.reshape(30, 100)
    xs = {"signed": x, "unsigned": x * x}
    out = {"x_signed": x, "x_unsigned": xs["unsigned"]}
    for kind, code in (("signed", SIGNED), ("unsigned", UNSIGNED)):
        for bs in (256, 2048):
            q, st = F.quantize_blockwise(xs[kind], code=code, blocksize=bs)
            near, absmax = nearest_quantize(xs[kind], code, bs)
            assert torch.equal(absmax, st.absmax), "absmax differs from bitsandbytes'"
            differ = (near != q).sum().item()
            off = (near.int() - q.int()).abs().max().item()
            print(f"quantize {kind} block {bs}: bitsandbytes' CPU codes differ from nearest at "
                  f"{differ} of {q.numel()} elements (by at most {off} code)")
            out[f"codes_{kind}_{bs}"] = q
            out[f"nearest_{kind}_{bs}"] = near
            out[f"absmax_{kind}_{bs}"] = st.absmax
            if bs == 256:
                out[f"dequant_{kind}_{bs}"] = F.dequantize_blockwise(q, st)
    return out


# ---- trajectory -------------------------------------------------------------------------------
SHAPES = {"w": ((41, 100), torch.float32), "e": ((32, 128), torch.bfloat16), "b": ((100,), torch.float32)}
SALT = {"w": 1, "e": 2, "b": 3}
STEPS = 5
LR = 0.01
LR_FACTORS = [1.0, 0.9, 0.8, 0.7, 0.6]
WEIGHT_DECAY = 0.01  # group of w and e; b: 0


def init_param(name):
    shape, dtype = SHAPES[name]
    n = torch.Size(shape).numel()
    idx = torch.arange(n, dtype=torch.int64)
    k = torch.remainder(idx * 53 + SALT[name], 211) - 105
    return (k.to(torch.float32) / 128.0).reshape(shape).to(dtype)


def grad_of(name, p, step):
    """0.5 p + c / 64 with c an integer in [-99, 99]: exact in fp32 (then rounded to p's dtype)."""
    idx = torch.arange(p.numel(), dtype=torch.int64)
    c = torch.remainder(idx * 37 + step * 101 + SALT[name], 199) - 99
    g = p.detach().float().reshape(-1) * 0.5 + c.to(torch.float32) / 64.0
    return g.reshape(p.shape).to(p.dtype)


def run_bnb():
    params = {k: torch.nn.Parameter(init_param(k)) for k in SHAPES}
    opt = bnb.optim.AdamW8bit(
        [{"params": [params["w"], params["e"]], "weight_decay": WEIGHT_DECAY},
         {"params": [params["b"]], "weight_decay": 0.0}],
        lr=LR, betas=(0.9, 0.999), eps=1e-8)
    traj = {}
    for step in range(STEPS):
        for g in opt.param_groups:
            g["lr"] = LR * LR_FACTORS[step]
        for k, p in params.items():
            p.grad = grad_of(k, p, step)
        opt.step()
        for k, p in params.items():
            traj[f"{k}/{step + 1}"] = p.detach().clone()
    for k, p in params.items():
        st = opt.state[p]
        kind = "8-bit" if st["state1"].dtype == torch.uint8 else "fp32"
        print(f"trajectory: {k} {tuple(p.shape)} {p.dtype}: {kind} state {sorted(st)}")
    return traj


def main():
    os.makedirs(OUT, exist_ok=True)
    print("bitsandbytes", bnb.__version__, "torch", torch.__version__,
          "cpu", torch.backends.cpu.get_cpu_capability())
    save_file({"signed": SIGNED, "unsigned": UNSIGNED}, os.path.join(OUT, "maps.safetensors"))
    save_file(quantize_fixtures(), os.path.join(OUT, "quantize.safetensors"))

    bnb_traj = run_bnb()
    # The same optimizer code with exact round-to-nearest codes.
    original = bnb_cpu_ops._quant_blockwise_fp32_direct

    def nearest_direct(a_fp32, code, absmax_out, out_uint8, blocksize):
        q, absmax = nearest_quantize(a_fp32, code, blocksize)
        out_uint8.copy_(q)
        absmax_out.copy_(absmax)

    bnb_cpu_ops._quant_blockwise_fp32_direct = nearest_direct
    try:
        near_traj = run_bnb()
    finally:
        bnb_cpu_ops._quant_blockwise_fp32_direct = original

    out = {"init/" + k: init_param(k) for k in ("b",)}
    out["grad0/b"] = grad_of("b", init_param("b"), 0)
    for key, t in bnb_traj.items():
        out["bnb/" + key] = t
    for key, t in near_traj.items():  # first and last steps (the fixtures stay small)
        if key.endswith("/1") or key.endswith(f"/{STEPS}"):
            out["nearest/" + key] = t
    for k in SHAPES:
        last = f"{k}/{STEPS}"
        d = (bnb_traj[last].float() - near_traj[last].float()).abs().max().item()
        moved = (bnb_traj[last].float() - init_param(k).float()).abs().max().item()
        print(f"trajectory {k}: bitsandbytes vs nearest after {STEPS} steps: max |diff| {d:.3g} "
              f"(max |movement| {moved:.3g})")
    # The vector width of ATen's CPU kernels: another width rounds some operations apart, and the
    # test compares bit for bit only on the same width. One metadata key (safetensors orders them).
    fixture = {"cpu_capability": torch.backends.cpu.get_cpu_capability(), "torch": torch.__version__,
               "bitsandbytes": importlib.metadata.version("bitsandbytes")}
    save_file(out, os.path.join(OUT, "trajectory.safetensors"), metadata={"fixture": json.dumps(fixture)})
    for f in sorted(os.listdir(OUT)):
        print(f, os.path.getsize(os.path.join(OUT, f)), "bytes")


if __name__ == "__main__":
    main()
