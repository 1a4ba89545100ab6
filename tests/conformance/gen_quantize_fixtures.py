"""Emits tests/fixtures/quantize/*.safetensors: what bitsandbytes (0.50.2, on the CPU) makes of a
few small tensors, which tests/peft/test_quantize.cpp holds lib/peft/quantize against bit for bit.

  maps.safetensors       the NF4 codebook (get_4bit_type('nf4')) and create_dynamic_map(signed=True)
                         and (signed=False)
  nf4.safetensors        quantize_4bit(x, blocksize, quant_type='nf4', compress_statistics=False and
                         True): the packed bytes, the plain absmax, the nested pieces (the absmax as
                         uint8 codes, the per-256 scales, the nested code map, the offset), and
                         dequantize_4bit of both. Cases: plain, 2-D, a ragged last block, an odd
                         element count, outliers, an all-zero block and an all-zero ragged tail,
                         bfloat16, more than 256 blocks (two nested blocks, the second ragged),
                         values on the midpoints between NF4 codes (ties), and a pair that tells
                         x * (1 / absmax) (full blocks) from x / absmax (the ragged block).
  blockwise8.safetensors quantize_blockwise(x, code, blocksize) with the signed and the unsigned
                         dynamic map, blocks of 2048 and 256: bitsandbytes' native CPU kernel
                         ("cpu"), and its PyTorch reference kernel ("nearest", the "default"
                         registration, what it runs where it has no native kernel); the dequantized
                         values of the CPU kernel's codes; the 255 midpoints of the signed map;
                         and, in blocks of 4, the pair that tells the two scalings apart.
  int8.safetensors       int8_vectorwise_quant / int8_vectorwise_dequant (LLM.int8 weights): int8
                         codes and per-row absmax (SCB), float32, float16 and bfloat16 rows, a zero
                         row and outliers.

Each file's metadata lists its cases ("cases", comma-separated) and each case's parameters
("<case>.block_size", ...). Tensor names are "<case>/<piece>".

Run (needs bitsandbytes and safetensors in the project's .venv: pip install bitsandbytes==0.50.2):
  .venv/bin/python tests/conformance/gen_quantize_fixtures.py
on an x86-64 CPU without AVX-512: there bitsandbytes' CPU dequantize_4bit takes its scalar path;
its AVX-512 path reads the absmax per row rather than per flat block when a row is not a whole
number of blocks, which this script detects (it checks every dequantization against
code[q] * absmax) and refuses.
"""
import json
import math
import os

import bitsandbytes
import bitsandbytes.functional as F
import torch
from safetensors.torch import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "quantize")
DEFAULT_KEY = torch._C.DispatchKey.CompositeExplicitAutograd


def nearest_blockwise(x, code, blocksize):
    """bitsandbytes' PyTorch reference kernel (registered for "default"), bypassing the CPU one."""
    op = torch.ops.bitsandbytes.quantize_blockwise.default
    return op._op_dk(DEFAULT_KEY, x, code, blocksize)


def with_outliers(t, count, scale, gen):
    flat = t.reshape(-1).clone()
    idx = torch.randperm(flat.numel(), generator=gen)[:count]
    flat[idx] *= scale
    return flat.reshape(t.shape)


def check_4bit_dequant(packed, absmax, blocksize, n, got):
    """bitsandbytes' dequantization must be code[q] * absmax[block] (see the docstring)."""
    code = F.get_4bit_type("nf4", device="cpu")
    q = torch.stack([packed.reshape(-1) >> 4, packed.reshape(-1) & 15], dim=1).reshape(-1)[:n].long()
    scale = absmax.float().repeat_interleave(blocksize)[:n]
    want = (code[q] * scale).to(got.dtype)
    if not torch.equal(want.reshape(-1).view(torch.int16 if got.element_size() == 2 else torch.int32),
                       got.reshape(-1).view(torch.int16 if got.element_size() == 2 else torch.int32)):
        raise SystemExit("bitsandbytes' dequantize_4bit is not code[q] * absmax on this machine "
                         "(AVX-512 path?): regenerate on an x86-64 CPU without AVX-512")


def nf4_cases(gen):
    cases = {}
    cases["normal64"] = (torch.randn(64, generator=gen), 64)
    cases["rows3x64"] = (torch.randn(3, 64, generator=gen), 64)
    cases["ragged130"] = (torch.randn(130, generator=gen), 64)
    cases["odd5x13"] = (torch.randn(5, 13, generator=gen), 64)
    cases["outliers16x48"] = (with_outliers(torch.randn(16, 48, generator=gen), 6, 25.0, gen), 64)
    z = torch.randn(200, generator=gen)
    z[64:128] = 0.0  # an all-zero block
    z[192:] = 0.0  # an all-zero ragged tail
    cases["zeros200"] = (z, 64)
    cases["bf16_3x64"] = ((torch.randn(3, 64, generator=gen) * 0.02).bfloat16(), 64)
    # 257 blocks of 32: the nested quantization has a full block of 256 and a ragged one of 1.
    cases["many_bf16"] = (with_outliers(torch.randn(8200, generator=gen), 20, 8.0, gen).bfloat16(), 32)
    cases["block128"] = (torch.randn(4, 96, generator=gen), 128)
    # The midpoints between neighbouring NF4 codes in float32 (bitsandbytes rounds there to the
    # lower code), one float above and one below each; 1.0 makes the block's absmax 1.
    code = F.get_4bit_type("nf4", device="cpu")
    mid = (code[:-1] + code[1:]) / 2
    up = torch.nextafter(mid, torch.full_like(mid, 2.0))
    down = torch.nextafter(mid, torch.full_like(mid, -2.0))
    ties = torch.cat([torch.tensor([1.0]), mid, up, down, torch.zeros(64 - 1 - 45)])
    cases["ties"] = (ties, 64)
    # A pair (absmax a, value x) where x * (1 / a) and x / a fall on either side of an NF4 midpoint:
    # once in a full block (bitsandbytes multiplies by the reciprocal) and once as the ragged tail
    # (it divides), so the two elements 1 and 65 get different codes.
    a, x = 2.2338128089904785, -1.8944884538650513
    cases["ragged_scaling"] = (torch.tensor([a, x] + [0.0] * 62 + [a, x]), 64)
    return cases


def gen_nf4(gen):
    tensors, meta = {}, {}
    cases = nf4_cases(gen)
    for name, (x, bs) in cases.items():
        packed, st = F.quantize_4bit(x, blocksize=bs, compress_statistics=False, quant_type="nf4")
        packed_n, st_n = F.quantize_4bit(x, blocksize=bs, compress_statistics=True, quant_type="nf4")
        assert torch.equal(packed, packed_n)
        assert packed.dtype == torch.uint8 and packed.shape == ((x.numel() + 1) // 2, 1)
        deq = F.dequantize_4bit(packed, st)
        deq_n = F.dequantize_4bit(packed_n, st_n)
        # (bitsandbytes' CPU kernel gives a 1-D weight back as (1, n): stored in the input's shape.)
        assert deq.dtype == x.dtype and deq.numel() == x.numel()
        deq, deq_n = deq.reshape(x.shape), deq_n.reshape(x.shape)
        check_4bit_dequant(packed, st.absmax, bs, x.numel(), deq)
        nested_absmax = F.dequantize_blockwise(st_n.absmax, st_n.state2) + st_n.offset
        check_4bit_dequant(packed, nested_absmax, bs, x.numel(), deq_n)
        assert st_n.state2.blocksize == 256 and st_n.absmax.dtype == torch.uint8
        if name == "ragged_scaling":
            codes = torch.stack([packed.reshape(-1) >> 4, packed.reshape(-1) & 15], 1).reshape(-1)
            assert codes[1] != codes[65], "the pair no longer tells division from the reciprocal"
        tensors.update({
            f"{name}/input": x.contiguous(),
            f"{name}/packed": packed.contiguous(),
            f"{name}/absmax": st.absmax.contiguous(),
            f"{name}/dequant": deq.contiguous(),
            f"{name}/nested_absmax_codes": st_n.absmax.contiguous(),
            f"{name}/nested_absmax_scales": st_n.state2.absmax.contiguous(),
            f"{name}/nested_code": st_n.state2.code.contiguous(),
            f"{name}/nested_offset": st_n.offset.reshape(1).contiguous(),
            f"{name}/nested_dequant": deq_n.contiguous(),
        })
        meta[f"{name}.block_size"] = str(bs)
    meta["cases"] = ",".join(cases)
    return tensors, meta


def gen_blockwise(gen):
    tensors, meta = {}, {}
    x = with_outliers(torch.randn(2100, generator=gen), 8, 12.0, gen)
    x[512:768] = 0.0  # an all-zero block of 256
    inputs = {"signed": x, "unsigned": x.abs() ** 2}
    names = []
    for signed in (True, False):
        code = F.create_dynamic_map(signed=signed)
        label = "signed" if signed else "unsigned"
        tensors[f"{label}/input"] = inputs[label].contiguous()
        for bs in (2048, 256):
            name = f"{label}_{bs}"
            xin = inputs[label]
            q, st = F.quantize_blockwise(xin, code=code, blocksize=bs)
            deq = F.dequantize_blockwise(q, st)
            qn, absn = nearest_blockwise(xin, code, bs)
            tensors.update({
                f"{name}/cpu_codes": q.contiguous(),
                f"{name}/cpu_absmax": st.absmax.contiguous(),
                f"{name}/cpu_dequant": deq.contiguous(),
                f"{name}/nearest_codes": qn.contiguous(),
                f"{name}/nearest_absmax": absn.contiguous(),
            })
            meta[f"{name}.block_size"] = str(bs)
            meta[f"{name}.input"] = f"{label}/input"
            meta[f"{name}.signed"] = "1" if signed else "0"
            names.append(name)
    # Ties: the 255 midpoints of the signed map in float32, after 1.0 (the absmax): the reference
    # kernel rounds a midpoint to the lower code; the CPU kernel bins the value first.
    code = F.create_dynamic_map(signed=True)
    mid = (code[:-1] + code[1:]) / 2
    ties = torch.cat([torch.tensor([1.0]), mid])
    q, st = F.quantize_blockwise(ties, code=code, blocksize=256)
    qn, absn = nearest_blockwise(ties, code, 256)
    tensors.update({
        "ties/input": ties,
        "ties/cpu_codes": q,
        "ties/cpu_absmax": st.absmax,
        "ties/cpu_dequant": F.dequantize_blockwise(q, st),
        "ties/nearest_codes": qn,
        "ties/nearest_absmax": absn,
    })
    meta.update({"ties.block_size": "256", "ties.input": "ties/input", "ties.signed": "1"})
    names.append("ties")
    # As in nf4.safetensors: x * (1 / a) and x / a round to neighbouring codes; the reference kernel
    # scales the full block by the reciprocal and the ragged tail by division. Blocks of 4.
    a, x = 1.309207797050476, 1.0146360397338867
    pair = torch.tensor([a, x, 0.0, 0.0, a, x])
    q, st = F.quantize_blockwise(pair, code=code, blocksize=4)
    qn, absn = nearest_blockwise(pair, code, 4)
    assert qn[1] != qn[5], "the pair no longer tells division from the reciprocal"
    tensors.update({
        "ragged_scaling/input": pair,
        "ragged_scaling/cpu_codes": q,
        "ragged_scaling/cpu_absmax": st.absmax,
        "ragged_scaling/cpu_dequant": F.dequantize_blockwise(q, st),
        "ragged_scaling/nearest_codes": qn,
        "ragged_scaling/nearest_absmax": absn,
    })
    meta.update({"ragged_scaling.block_size": "4", "ragged_scaling.input": "ragged_scaling/input",
                 "ragged_scaling.signed": "1"})
    names.append("ragged_scaling")
    meta["cases"] = ",".join(names)
    return tensors, meta


def gen_int8(gen):
    tensors, meta = {}, {}
    w = with_outliers(torch.randn(8, 32, generator=gen), 4, 30.0, gen)
    w[5] = 0.0  # a zero row
    cases = {
        "f32_8x32": w,
        "f16_4x16": (torch.randn(4, 16, generator=gen) * 0.05).half(),
        "bf16_6x24": with_outliers(torch.randn(6, 24, generator=gen), 3, 10.0, gen).bfloat16(),
    }
    # Values whose scaled value lands on .5 (round half to even): absmax 127 makes the scale 1.
    cases["halves_2x8"] = torch.tensor([[127.0, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5],
                                        [-127.0, 10.5, 11.5, -10.5, 0.25, 0.75, 126.5, -126.5]])
    for name, x in cases.items():
        codes, stats, outliers = F.int8_vectorwise_quant(x.clone())
        assert outliers is None and codes.dtype == torch.int8 and stats.dtype == torch.float32
        deq = F.int8_vectorwise_dequant(codes, stats)
        tensors.update({
            f"{name}/input": x.contiguous(),
            f"{name}/codes": codes.contiguous(),
            f"{name}/row_absmax": stats.contiguous(),
            f"{name}/dequant": deq.contiguous(),
        })
    meta["cases"] = ",".join(cases)
    return tensors, meta


def main():
    os.makedirs(OUT, exist_ok=True)
    version = {"bitsandbytes": bitsandbytes.__version__, "torch": torch.__version__.split("+")[0]}
    gen = torch.Generator().manual_seed(1234)
    maps = {
        "nf4": F.get_4bit_type("nf4", device="cpu"),
        "dynamic_signed": F.create_dynamic_map(signed=True),
        "dynamic_unsigned": F.create_dynamic_map(signed=False),
    }
    save_file(maps, os.path.join(OUT, "maps.safetensors"), metadata=version)
    for file, make in (("nf4", gen_nf4), ("blockwise8", gen_blockwise), ("int8", gen_int8)):
        tensors, meta = make(gen)
        meta.update(version)
        save_file(tensors, os.path.join(OUT, f"{file}.safetensors"), metadata=meta)
    total = sum(os.path.getsize(os.path.join(OUT, f)) for f in os.listdir(OUT))
    print(f"wrote {OUT} ({total} bytes)")


if __name__ == "__main__":
    main()
