"""Where a profiled GPU step's time goes: the CUDA kernels of a Kineto trace (hftrain's
HFTRAIN_PROFILE trace-rank0.json, or torch.profiler's export_chrome_trace) summed into buckets by
name (matmul, attention, norm, elementwise add/copy/cast, output layer, optimizer, other) per step,
and the GPU's idle time: the span from the first kernel to the last less the union of the kernels'
intervals. Prints one table; --json writes it.
Usage: python bench/kernel_buckets.py TRACE.json STEPS [--json OUT]
"""
import argparse
import json
import re

BUCKETS = [  # first match wins
    ("attention", r"flash|fmha|cudnn.*(attn|sdpa)|sdpa|attention|scaled_dot"),
    ("matmul", r"gemm|cutlass|sm\d+_xmma|cublas|nvjet|wgmma|matmul"),
    ("optimizer", r"adam|fused_sgd|multi_tensor_apply|foreach|_amp_"),
    ("head", r"softmax|cross_entropy|nll_loss|log_softmax|classifier"),
    ("norm", r"layer_norm|rms_norm|rmsnorm|layernorm|norm_kernel"),
    ("add/copy/cast", r"copy|cast|elementwise|vectorized|unrolled|add|mul|fill|where"),
]


def bucket_of(name):
    low = name.lower()
    for bucket, pattern in BUCKETS:
        if re.search(pattern, low):
            return bucket
    return "other"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace")
    ap.add_argument("steps", type=int)
    ap.add_argument("--json")
    a = ap.parse_args()
    with open(a.trace) as f:
        events = json.load(f)["traceEvents"]
    kernels = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    if not kernels:
        raise SystemExit(f"kernel_buckets.py: no GPU kernels in {a.trace}")
    sums = {}
    for e in kernels:
        b = bucket_of(e["name"])
        sums[b] = sums.get(b, 0.0) + e["dur"]
    spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in kernels)
    busy, end = 0.0, spans[0][0]
    for s, t in spans:
        if t > end:
            busy += t - max(s, end)
            end = t
    window = spans[-1][1] - spans[0][0]
    rows = {b: us / a.steps / 1000 for b, us in sorted(sums.items(), key=lambda kv: -kv[1])}
    rows["GPU idle"] = (window - busy) / a.steps / 1000
    print(f"{'bucket':<16} {'ms/step':>9}")
    for b, ms in rows.items():
        print(f"{b:<16} {ms:9.2f}")
    print(f"{'step (span)':<16} {window / a.steps / 1000:9.2f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"ms_per_step": rows, "span_ms_per_step": window / a.steps / 1000}, f, indent=1)


if __name__ == "__main__":
    main()
