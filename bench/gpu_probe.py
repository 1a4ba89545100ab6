"""What each lever of a faster GPU step is worth on the card at hand, in PyTorch alone (no hftrain
build needed): the first phase of scripts/gpu-window.sh. GPT-2 124M's shapes (micro-batch 16 x 1024,
d 768, 12 heads, vocabulary 50257) unless told otherwise. Each probe times its kernels with CUDA
events (median of --reps after --warmup) and prints one row: probe, variant, ms, x the first variant
of the probe. Rows go to --json as they finish, so a window that ends early keeps what it measured.

Probes (issue 38, bench/PERF-NOTES in shared/):
  residual   x + y into the residual stream: fp32 + bf16 (autocast's stream) vs bf16 + bf16
  norm       LayerNorm forward + backward on fp32 vs bf16 input; RMSNorm likewise
  attention  causal SDPA in hftrain's layout (q, k, v cut from one fused projection) with each
             backend forced: flash, cuDNN, memory-efficient
  head       the output layer's logits: bf16 mm then .float() vs mm with an fp32 output
             (torch.mm(..., out_dtype=torch.float32), where the wheel has it)
  fp8        _scaled_mm (e4m3, per-tensor scales) vs bf16 mm at GPT-2 and 1B-8B shapes, casts and amax
             included, so the decision on fp8 can be revisited with figures
Usage: python bench/gpu_probe.py [--json OUT.json] [--only residual,norm,...]
"""
import argparse
import json
import statistics

import torch
import torch.nn.functional as F

B, T, C, H, V = 16, 1024, 768, 12, 50257


def timed(fn, warmup, reps):
    """Median milliseconds of fn() over reps CUDA-event-timed calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def probe_residual(dev):
    x32 = torch.randn(B, T, C, device=dev)
    x16 = x32.bfloat16()
    y = torch.randn(B, T, C, device=dev, dtype=torch.bfloat16)
    return [("fp32 + bf16 -> fp32", lambda: x32 + y), ("bf16 + bf16 -> bf16", lambda: x16 + y)]


def probe_norm(dev):
    rows = []
    for name, norm in (("layernorm", torch.nn.LayerNorm(C).to(dev)), ("rmsnorm", torch.nn.RMSNorm(C).to(dev))):
        for dtype in (torch.float32, torch.bfloat16):
            x = torch.randn(B, T, C, device=dev, dtype=dtype, requires_grad=True)
            mod = norm if dtype == torch.float32 else norm.to(dtype)
            g = torch.randn(B, T, C, device=dev, dtype=dtype)

            def fwd_bwd(x=x, mod=mod, g=g):
                mod(x).backward(g)
                x.grad = None
            rows.append((f"{name} fwd+bwd, {str(dtype).split('.')[-1]} in", fwd_bwd))
    return rows


def probe_attention(dev):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    qkv = torch.randn(B, T, 3 * C, device=dev, dtype=torch.bfloat16, requires_grad=True)
    g = torch.randn(B, H, T, C // H, device=dev, dtype=torch.bfloat16)

    def step(backend):
        def run():
            q, k, v = (z.view(B, T, H, C // H).transpose(1, 2) for z in qkv.split(C, dim=2))
            with sdpa_kernel([backend]):
                F.scaled_dot_product_attention(q, k, v, is_causal=True).backward(g)
            qkv.grad = None
        return run
    rows = []
    for name, backend in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION),
                          ("mem-efficient", SDPBackend.EFFICIENT_ATTENTION)):
        rows.append((f"sdpa fwd+bwd, {name}", step(backend)))
    return rows


def probe_head(dev):
    h = torch.randn(B * T // 4, C, device=dev, dtype=torch.bfloat16)  # a quarter of the rows: one chunk
    w = torch.randn(V, C, device=dev, dtype=torch.bfloat16)
    rows = [("mm bf16 then .float()", lambda: torch.mm(h, w.t()).float())]
    try:
        torch.mm(h[:8], w[:8].t(), out_dtype=torch.float32)
        rows.append(("mm with out_dtype=float32", lambda: torch.mm(h, w.t(), out_dtype=torch.float32)))
    except (TypeError, RuntimeError) as e:
        print(f"head: mm(out_dtype=float32) is not available here: {str(e).splitlines()[0][:120]}")
    rows.append(("logits + cross_entropy fwd, fp32", lambda: F.cross_entropy(
        torch.mm(h, w.t()).float(), torch.randint(0, V, (h.shape[0],), device=dev))))
    return rows


def probe_fp8(dev):
    rows = []
    if not hasattr(torch, "_scaled_mm") or torch.cuda.get_device_capability() < (8, 9):
        print("fp8: no _scaled_mm on this device")
        return rows
    for m, k, n in ((16384, 768, 3072), (16384, 2048, 8192), (16384, 4096, 14336)):
        a = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
        b = torch.randn(n, k, device=dev, dtype=torch.bfloat16)

        def fp8(a=a, b=b):
            sa = a.abs().max().float() / 448.0
            sb = b.abs().max().float() / 448.0
            a8 = (a / sa).to(torch.float8_e4m3fn)
            b8 = (b / sb).to(torch.float8_e4m3fn)
            return torch._scaled_mm(a8, b8.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
        rows.append((f"mm {m}x{k}x{n} bf16", lambda a=a, b=b: torch.mm(a, b.t())))
        rows.append((f"mm {m}x{k}x{n} fp8 incl. amax + casts", fp8))
    return rows


PROBES = {"residual": probe_residual, "norm": probe_norm, "attention": probe_attention, "head": probe_head,
          "fp8": probe_fp8}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", help="write the rows here as they finish")
    ap.add_argument("--only", default=",".join(PROBES))
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--reps", type=int, default=20)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("gpu_probe.py: no CUDA device")
    dev = torch.device("cuda")
    torch.backends.cuda.matmul.allow_tf32 = True
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, CUDA {torch.version.cuda}")
    print(f"{'probe':<10} {'variant':<44} {'ms':>9} {'x first':>8}")
    out = []
    for name in a.only.split(","):
        try:
            rows = PROBES[name](dev)
        except Exception as e:  # a probe that cannot run here says why and the others go on
            print(f"{name:<10} could not run: {str(e).splitlines()[0][:150]}")
            continue
        first = None
        for variant, fn in rows:
            try:
                ms = timed(fn, a.warmup, a.reps)
            except Exception as e:
                print(f"{name:<10} {variant:<44} failed: {str(e).splitlines()[0][:120]}")
                continue
            first = first or ms
            print(f"{name:<10} {variant:<44} {ms:9.3f} {ms / first:8.2f}", flush=True)
            out.append({"probe": name, "variant": variant, "ms": ms, "x_first": ms / first})
            if a.json:
                with open(a.json, "w") as f:
                    json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": out}, f,
                              indent=1)


if __name__ == "__main__":
    main()
