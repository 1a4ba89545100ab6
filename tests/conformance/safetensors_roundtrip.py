"""Holds hftrain's safetensors reader and writer against the Python `safetensors` library.

Drives tests/model/safetensors_tool_main.cpp (our reader and writer):
 (a) our file -> the library: `safetensors_tool write` writes one tensor of every supported dtype
     (odd shapes, a 0-d scalar, empty tensors); safetensors.torch.load_file and
     safetensors.numpy.load_file (for the dtypes numpy has) must give the values the tool's formula
     defines, and safe_open our metadata (numpy.load_file reads a second file without the
     dtypes numpy lacks).
 (b) the library's file -> us: safetensors.torch.save_file (every dtype, odd shapes, a scalar, an
     empty tensor, __metadata__) and safetensors.numpy.save_file; `safetensors_tool read` must
     report the same names, dtypes, shapes, metadata and byte checksums, and `safetensors_tool copy`
     must write a file the library loads back to the same bytes.
Exits non-zero with a message per mismatch.

    .venv/bin/python tests/conformance/safetensors_roundtrip.py build/tests/model/safetensors_tool
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
from safetensors import safe_open
import safetensors.numpy
import safetensors.torch

# Every dtype the format defines that LibTorch and this library both have; F4, F6_E2M3, F6_E3M2 and
# F8_E8M0 are not among them (see lib/model/weights/safetensors_header.cpp).
TORCH_TYPES = {
    "F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
    "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8,
    "U64": torch.uint64, "U32": torch.uint32, "U16": torch.uint16, "U8": torch.uint8,
    "BOOL": torch.bool, "F8_E4M3": torch.float8_e4m3fn, "F8_E5M2": torch.float8_e5m2,
    "F8_E4M3FNUZ": torch.float8_e4m3fnuz, "F8_E5M2FNUZ": torch.float8_e5m2fnuz,
    "C64": torch.complex64,
}
NUMPY_TYPES = {
    "F64": np.float64, "F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32,
    "I16": np.int16, "I8": np.int8, "U64": np.uint64, "U32": np.uint32, "U16": np.uint16,
    "U8": np.uint8, "BOOL": np.bool_, "C64": np.complex64,
}
SHAPES = [(3, 5), (7,), (2, 3, 5), (1, 9), (5, 1, 3), (11,)]  # as in safetensors_tool_main.cpp

failures = []


def check(condition, message):
    if not condition:
        failures.append(message)


def tool(*args):
    done = subprocess.run([TOOL, *args], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"FAIL: safetensors_tool {' '.join(args)} exited {done.returncode}: {done.stderr}")
    return done.stdout


def raw(t):
    """A tensor's bytes, whatever its dtype (numpy has no bfloat16 or float8)."""
    return t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()


def fnv1a64(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def expected_numpy(dtype, shape):
    """The tool's values for the integer and bool dtypes, computed independently of torch."""
    n = int(np.prod(shape, dtype=np.int64))
    base = [(i * 37 + 11) % 251 for i in range(n)]
    if dtype == "BOOL":
        return np.array([b % 3 == 0 for b in base], dtype=np.bool_).reshape(shape)
    width = np.dtype(NUMPY_TYPES[dtype]).itemsize
    m = int("01" * width, 16)
    vals = [(b - 125) * m for b in base] if dtype.startswith("I") else [b * m for b in base]
    return np.array(vals, dtype=NUMPY_TYPES[dtype]).reshape(shape)


def expected_torch(dtype, shape):
    """The tool's values as a torch tensor (floating types converted by torch, as the tool does)."""
    if dtype == "BOOL" or dtype[0] in "IU":
        return torch.from_numpy(expected_numpy(dtype, shape).copy())
    n = int(np.prod(shape, dtype=np.int64))
    re = torch.tensor([i * 0.37 - 1.5 for i in range(n)], dtype=torch.float64).reshape(shape)
    if dtype == "C64":
        im = torch.tensor([0.5 - i * 0.25 for i in range(n)], dtype=torch.float64).reshape(shape)
        return torch.complex(re.float(), im.float())
    return re.to(TORCH_TYPES[dtype])


def our_fixture(dtypes):
    """The tool's tensors of these dtypes: name -> (dtype, shape)."""
    names = {f"t_{d}": (d, SHAPES[k % len(SHAPES)]) for k, d in enumerate(TORCH_TYPES) if d in dtypes}
    extras = {"scalar_F64": ("F64", ()), "scalar_BOOL": ("BOOL", ()),
              "empty_BF16": ("BF16", (0, 3)), "empty_I32": ("I32", (2, 0))}
    names.update({k: v for k, v in extras.items() if v[0] in dtypes})
    return names


def check_our_file(path, dtypes):
    """(a): the library reads what we wrote."""
    want = our_fixture(dtypes)
    loaded = safetensors.torch.load_file(path)
    check(set(loaded) == set(want), f"(a) torch.load_file names {sorted(loaded)} != {sorted(want)}")
    for name, (dtype, shape) in want.items():
        if name not in loaded:
            continue
        t, e = loaded[name], expected_torch(dtype, shape)
        check(t.dtype == TORCH_TYPES[dtype], f"(a) {name}: torch dtype {t.dtype}, expected {dtype}")
        check(tuple(t.shape) == shape, f"(a) {name}: shape {tuple(t.shape)}, expected {shape}")
        check(raw(t) == raw(e), f"(a) {name}: values {t.flatten()[:6]} differ from {e.flatten()[:6]}")
        if dtype == "F64":  # exactly the formula, without torch in between
            check(t.flatten().tolist() == [i * 0.37 - 1.5 for i in range(t.numel())],
                  f"(a) {name}: F64 values are not i * 0.37 - 1.5")
    with safe_open(path, framework="pt") as f:
        check(f.metadata() == {"format": "pt", "writer": "hftrain ✓"},
              f"(a) metadata {f.metadata()} is not what the tool wrote")


def check_our_numpy_file(path, dtypes):
    """(a) again, through safetensors.numpy (which cannot load bfloat16 or float8 at all)."""
    want = {k: v for k, v in our_fixture(dtypes).items() if v[0] in NUMPY_TYPES}
    loaded = safetensors.numpy.load_file(path)
    check(set(loaded) == set(want), f"(a) numpy.load_file names {sorted(loaded)} != {sorted(want)}")
    for name, (dtype, shape) in want.items():
        if name not in loaded:
            continue
        a = loaded[name]
        check(a.dtype == NUMPY_TYPES[dtype] and a.shape == shape,
              f"(a) numpy {name}: {a.dtype} {a.shape}, expected {dtype} {shape}")
        if dtype == "BOOL" or dtype[0] in "IU":
            check(np.array_equal(a, expected_numpy(dtype, shape)), f"(a) numpy {name}: values differ")
        elif dtype == "C64":
            check(np.array_equal(a.real, np.float32([i * 0.37 - 1.5 for i in range(a.size)]).reshape(shape))
                  and np.array_equal(a.imag, np.float32([0.5 - i * 0.25 for i in range(a.size)]).reshape(shape)),
                  f"(a) numpy {name}: values differ")
        else:
            check(a.tobytes() == raw(expected_torch(dtype, shape)), f"(a) numpy {name}: values differ")


def library_tensors(dtypes):
    """(b): every dtype with bytes from a seeded generator (NaNs and infinities included), odd
    shapes, a scalar, an empty tensor."""
    rng = np.random.default_rng(6)
    out = {}
    for k, dtype in enumerate(dtypes):
        shapes = [(5, 3), (13,), (1, 2, 7), ()] + ([(0, 4)] if k % 2 == 0 else [])
        for j, shape in enumerate(shapes):
            t = torch.empty(shape, dtype=TORCH_TYPES[dtype])
            n = t.numel() * t.element_size()
            data = rng.integers(0, 2 if dtype == "BOOL" else 256, n, dtype=np.uint8)
            if n:
                t.reshape(-1).view(torch.uint8).copy_(torch.from_numpy(data))
            out[f"lib.{dtype}.{j}"] = t
    return out


def check_library_file(path, tensors, metadata):
    """(b): we read what the library wrote, and the library reads our copy of it."""
    ours = json.loads(tool("read", path))
    check(ours["metadata"] == metadata, f"(b) {path}: we read metadata {ours['metadata']}")
    got = {t["name"]: t for t in ours["tensors"]}
    check(set(got) == set(tensors), f"(b) {path}: we read names {sorted(got)}, wrote {sorted(tensors)}")
    for name, t in tensors.items():
        if name not in got:
            continue
        g, b = got[name], raw(t)
        want_dtype = next(d for d, ty in TORCH_TYPES.items() if ty == t.dtype)
        check(g["dtype"] == want_dtype, f"(b) {name}: we read dtype {g['dtype']}, wrote {want_dtype}")
        check(g["shape"] == list(t.shape), f"(b) {name}: we read shape {g['shape']}, wrote {list(t.shape)}")
        check(g["nbytes"] == len(b) and g["fnv1a64"] == fnv1a64(b), f"(b) {name}: bytes differ")
    copy = path + ".copy.safetensors"
    tool("copy", path, copy)
    back = safetensors.torch.load_file(copy)
    with safe_open(copy, framework="pt") as f:
        check(f.metadata() == metadata, f"(b) copy: metadata {f.metadata()} != {metadata}")
    for name, t in tensors.items():
        check(name in back and back[name].dtype == t.dtype and back[name].shape == t.shape
              and raw(back[name]) == raw(t), f"(b) copy: {name} differs after our read and write")


def main():
    dtypes = json.loads(tool("dtypes"))
    check(dtypes == list(TORCH_TYPES), f"supported dtypes {dtypes} != {list(TORCH_TYPES)}")
    dtypes = [d for d in dtypes if d in TORCH_TYPES]
    with tempfile.TemporaryDirectory(prefix="hftrain-st-") as tmp:
        ours = os.path.join(tmp, "ours.safetensors")
        tool("write", ours)
        check_our_file(ours, dtypes)
        ours_np = os.path.join(tmp, "ours_np.safetensors")
        tool("write", ours_np, *[d for d in dtypes if d in NUMPY_TYPES])
        check_our_numpy_file(ours_np, [d for d in dtypes if d in NUMPY_TYPES])

        meta = {"format": "pt", "source": "python safetensors", "unicode": "héllo ✓ 日本"}
        tensors = library_tensors(dtypes)
        lib_pt = os.path.join(tmp, "lib_pt.safetensors")
        safetensors.torch.save_file(tensors, lib_pt, metadata=meta)
        check_library_file(lib_pt, tensors, meta)

        np_tensors = {k: v for k, v in tensors.items() if k.split(".")[1] in NUMPY_TYPES}
        lib_np = os.path.join(tmp, "lib_np.safetensors")
        safetensors.numpy.save_file({k: v.numpy() for k, v in np_tensors.items()}, lib_np,
                                    metadata={"format": "np"})
        check_library_file(lib_np, np_tensors, {"format": "np"})
    for f in failures:
        print("FAIL:", f)
    if failures:
        sys.exit(f"{len(failures)} safetensors interop mismatch(es)")
    print(f"safetensors interop: {len(dtypes)} dtypes round-trip both ways")


if __name__ == "__main__":
    TOOL = sys.argv[1]
    main()
