"""End-to-end: damaged and hostile input files, one case (or a few) per class, through the real binary.

    .venv/bin/python tests/e2e/hostile_inputs.py path/to/hftrain

A small run makes a checkpoint and a final model; each case copies what it needs, damages one
file, and runs the command that reads it. Classes: JSON nested a million deep (tokenizer.json,
safetensors header, manifest, JSONL record), sizes that would allocate without bound (a 2^63
safetensors header length, a model.json vocabulary of 10^9, a 2^31 class id), checkpoint fields
that cannot be right (a negative cursor, a fractional step, a 2^63 step, an RNG state of the wrong
size and dtype, optimizer moments in another dtype; the manifest is rewritten to match, so the field
checks, not the checksums, answer; `hftrain verify` must report the same fields),
file-system surprises (a folder where model.safetensors should be, an unreadable folder inside a
data folder and a run directory that cannot be created, both run as an unprivileged user when this
runs as root), and launch variables of zero.
Each must end with exit 2, a message under 60 lines that names the file (or key), no crash or
library text, and the damaged directory unchanged on disk. Exits 1 on any failure.
"""
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import xxhash

LIBRARY_WORDS = ["terminate called", "Segmentation", "Aborted", "what():", "std::", "c10::", "Exception raised from",
                 "filesystem error", "json.exception", "bad_alloc", "DefaultCPUAllocator", "frame #"]
failures = []


def tree_digest(path):
    """A digest of every file under `path` (names and bytes): what 'unchanged on disk' compares."""
    h = hashlib.sha256()
    for root, dirs, files in sorted(os.walk(path)):
        dirs.sort()
        for f in sorted(files):
            p = os.path.join(root, f)
            h.update(os.path.relpath(p, path).encode())
            try:
                with open(p, "rb") as fh:
                    h.update(fh.read())
            except OSError:
                h.update(b"<unreadable>")
    return h.hexdigest()


def expect_refusal(name, args, names, env, watched=None, user=None, report=False):
    """Runs hftrain; exit 2, a short message naming `names`, no internals, `watched` unchanged.
    report: the command reports on stdout (hftrain verify), which is then read with stderr."""
    before = tree_digest(watched) if watched else None
    cmd = list(args)
    if user is not None:
        cmd = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *cmd]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    err = p.stdout + p.stderr if report else p.stderr
    problems = []
    if p.returncode != 2:
        problems.append(f"exit {p.returncode}")
    lines = err.count("\n")
    if lines >= 60:
        problems.append(f"{lines} lines of stderr")
    leaked = [w for w in LIBRARY_WORDS if w in err]
    if leaked:
        problems.append(f"library text {leaked}")
    for n in names:
        if n not in err:
            problems.append(f"no mention of {n!r}")
    if watched and tree_digest(watched) != before:
        problems.append(f"{watched} changed on disk")
    status = "ok" if not problems else "FAIL " + "; ".join(problems)
    shown = [line for line in err.strip().splitlines() if line.startswith("error:" if not report else "  - ")]
    print(f"{name}: {status}: {(shown[0] if shown else err.strip()[-160:])[:200]}")
    if problems:
        failures.append(f"{name}: {'; '.join(problems)}\n{err[-800:]}")


def fix_manifest(ck, rel):
    """manifest.json made to agree with the damaged file (size, checksum, tensor shapes)."""
    path = os.path.join(ck, "manifest.json")
    m = json.load(open(path))
    data = open(os.path.join(ck, rel), "rb").read()
    for e in m["files"]:
        if e["path"] == rel:
            e["size"] = len(data)
            e["checksum"] = xxhash.xxh3_128_hexdigest(data)
            if "tensors" in e and rel.endswith(".safetensors"):
                (n,) = struct.unpack("<Q", data[:8])
                header = json.loads(data[8:8 + n])
                e["tensors"] = {k: {"dtype": v["dtype"], "shape": v["shape"]} for k, v in header.items()
                                if k != "__metadata__"}
    json.dump(m, open(path, "w"), indent=2)


def write_safetensors(path, tensors):
    """tensors: name -> (dtype, shape, bytes)."""
    header, data = {}, b""
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def main():
    hftrain = os.path.realpath(sys.argv[1])
    src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    work = tempfile.mkdtemp(prefix="hftrain-hostile-")
    os.chmod(work, 0o755)
    env = dict(os.environ, HFTRAIN_RECIPES_DIR=os.path.join(src, "recipes"), HFTRAIN_CACHE_DIR=os.path.join(work, "cache"))
    try:
        corpus = os.path.join(work, "corpus.txt")
        with open(corpus, "w") as f:
            for i in range(200):
                f.write(f"The cat {i} sat on the mat. Number {i % 7} came next.\n%\n")
        common = [f"data.train={corpus}", "data.separator='%'", "model.n_layer=1", "model.n_head=2", "model.d_model=32",
                  "model.max_seq_len=64", "data.seq_len=32", "model.vocab_size=260", "trainer.micro_batch_size=4",
                  "scheduler.warmup_steps=1", "trainer.device=cpu"]
        base = os.path.join(work, "base")
        subprocess.run([hftrain, "run", "quickstart", *common, "trainer.max_steps=4", "checkpoint.every_steps=2",
                        f"run.output_dir={base}"], check=True, capture_output=True, env=env)

        def copy(name):
            d = os.path.join(work, name)
            shutil.copytree(base, d)
            return d

        def resume(name, rel, edit, names):
            """Damages checkpoint-4's `rel` with `edit(path)`, fixes the manifest, resumes; and
            `hftrain verify` reports the same."""
            run = copy(name)
            ck = os.path.join(run, "checkpoint-4")
            edit(os.path.join(ck, rel))
            fix_manifest(ck, rel)
            expect_refusal(name, [hftrain, "resume", ck, "trainer.max_steps=6"], names, env, watched=ck)
            if rel.startswith("optimizer"):
                return  # verify reads no optimizer tensors' values: the resume's optimizer decides their dtype
            expect_refusal(name + " (verify)", [hftrain, "verify", ck], names, env, watched=ck, report=True)

        def edit_json(key, value):
            def edit(path):
                j = json.load(open(path))
                j[key] = value
                json.dump(j, open(path, "w"))
            return edit

        def replace_with(text):
            def edit(path):
                with open(path, "w") as f:
                    f.write(text)
            return edit

        deep = "[" * 1000000 + "]" * 1000000

        # --- nesting a million deep
        d = copy("deep-tokenizer")
        replace_with(deep)(os.path.join(d, "final", "tokenizer.json"))
        expect_refusal("deep tokenizer.json", [hftrain, "generate", os.path.join(d, "final"), "--prompt", "a"],
                       ["tokenizer.json", "nested deeper than 256"], env, watched=d)
        d = copy("deep-header")
        st = os.path.join(d, "final", "model.safetensors")
        with open(st, "wb") as f:
            f.write(struct.pack("<Q", len(deep)) + deep.encode())
        expect_refusal("deep safetensors header", [hftrain, "generate", os.path.join(d, "final"), "--prompt", "a"],
                       ["model.safetensors", "nested deeper than 256"], env, watched=d)
        d = copy("deep-manifest")
        replace_with(deep)(os.path.join(d, "checkpoint-4", "manifest.json"))
        expect_refusal("deep manifest.json", [hftrain, "resume", os.path.join(d, "checkpoint-4")],
                       ["manifest.json", "nested deeper than 256"], env, watched=d)
        jsonl = os.path.join(work, "deep.jsonl")
        with open(jsonl, "w") as f:
            f.write('{"text": "fine"}\n' + '{"text": ' + deep + "}\n")
        expect_refusal("deep JSONL record", [hftrain, "run", "quickstart", *common, f"data.train={jsonl}",
                                             "trainer.max_steps=2", f"run.output_dir={work}/out-jsonl"],
                       ["deep.jsonl:2", "nested deeper than 256"], env)

        # --- sizes that would allocate without bound
        d = copy("huge-header")
        with open(os.path.join(d, "final", "model.safetensors"), "r+b") as f:
            f.write(struct.pack("<Q", 2 ** 63))
        expect_refusal("safetensors header length 2^63", [hftrain, "generate", os.path.join(d, "final"), "--prompt", "a"],
                       ["model.safetensors"], env, watched=d)
        d = copy("huge-vocab")
        edit_json("vocab_size", 10 ** 9)(os.path.join(d, "final", "model.json"))
        expect_refusal("model.json vocabulary of 10^9", [hftrain, "generate", os.path.join(d, "final"), "--prompt", "a"],
                       ["model.json", "vocab_size", "16777216"], env, watched=d)

        # --- checkpoint fields that cannot be right (the manifest agrees with them)
        resume("data.json cursor -1", "data.json", edit_json("cursor", -1), ["data.json", "cursor is -1"])
        resume("trainer_state.json step 1.5", "trainer_state.json", edit_json("step", 1.5),
               ["trainer_state.json", "step is a number, not an integer"])
        resume("trainer_state.json step 2^63", "trainer_state.json", edit_json("step", 2 ** 63),
               ["trainer_state.json", "step is 9223372036854775808, above"])

        def rng(dtype, n):
            def edit(path):
                write_safetensors(path, {"cpu": (dtype, [n], bytes(n * (4 if dtype == "F32" else 1)))})
            return edit
        resume("RNG state of 10 bytes", "rng.safetensors", rng("U8", 10), ["rng.safetensors", "`cpu`"])
        resume("RNG state in F32", "rng.safetensors", rng("F32", 1264), ["rng.safetensors", "`cpu`"])

        def to_f64(path):
            """Every tensor of a safetensors file rewritten as F64 (its values kept)."""
            data = open(path, "rb").read()
            (n,) = struct.unpack("<Q", data[:8])
            header = json.loads(data[8:8 + n])
            tensors = {}
            for k, v in header.items():
                if k == "__metadata__":
                    continue
                begin, end = v["data_offsets"]
                values = struct.unpack(f"<{(end - begin) // 4}f", data[8 + n + begin:8 + n + end])
                tensors[k] = ("F64", v["shape"], struct.pack(f"<{len(values)}d", *values))
            write_safetensors(path, tensors)
        shard = sorted(f for f in os.listdir(os.path.join(base, "checkpoint-4", "optimizer")) if f.endswith(".safetensors"))[0]
        resume("optimizer moments in F64", f"optimizer/{shard}", to_f64, ["optimizer/index.json", "exp_avg", "holds Double, expected Float"])

        # --- the file system
        d = copy("folder-for-file")
        os.remove(os.path.join(d, "final", "model.safetensors"))
        os.mkdir(os.path.join(d, "final", "model.safetensors"))
        expect_refusal("a folder where model.safetensors should be",
                       [hftrain, "generate", os.path.join(d, "final"), "--prompt", "a"], ["model.safetensors"], env,
                       watched=d)
        if os.geteuid() == 0 and shutil.which("setpriv"):
            data_dir = os.path.join(work, "data-dir")
            os.makedirs(os.path.join(data_dir, "locked"))
            shutil.copy(corpus, os.path.join(data_dir, "a.txt"))
            os.chmod(os.path.join(data_dir, "locked"), 0o000)
            out = os.path.join(work, "out-locked")
            os.makedirs(out)
            os.chmod(out, 0o777)
            for root, dirs, files in os.walk(os.path.join(work, "cache")):  # the token cache, shared
                for x in dirs + files:
                    os.chmod(os.path.join(root, x), 0o777)
            expect_refusal("an unreadable folder inside data.train (as nobody)",
                           [hftrain, "run", "quickstart", *common, f"data.train={data_dir}", "trainer.max_steps=2",
                            f"run.output_dir={out}"], ["locked"], env, user=65534)
            read_only = os.path.join(work, "read-only")
            os.makedirs(read_only)
            os.chmod(read_only, 0o555)
            expect_refusal("run.output_dir inside a folder it cannot write (as nobody)",
                           [hftrain, "run", "quickstart", *common, "trainer.max_steps=2",
                            f"run.output_dir={read_only}/run"], ["run.output_dir", read_only, "permission denied"],
                           env, watched=read_only, user=65534)
        else:
            print("an unreadable folder inside data.train: skipped (needs root and setpriv to act as another user)")

        # --- launch variables of zero (a division, once)
        for extra, named in (({"RANK": "0", "WORLD_SIZE": "0"}, "WORLD_SIZE"),
                             ({"RANK": "0", "WORLD_SIZE": "1", "LOCAL_WORLD_SIZE": "0"}, "LOCAL_WORLD_SIZE")):
            e = dict(env, MASTER_ADDR="127.0.0.1", MASTER_PORT="29555", **extra)
            expect_refusal("launch variables " + ",".join(f"{k}={v}" for k, v in extra.items()),
                           [hftrain, "run", "quickstart", *common, "trainer.max_steps=2", f"run.output_dir={work}/out-env"],
                           [named], e)
    finally:
        for root, dirs, _ in os.walk(work):
            for x in dirs:
                try:
                    os.chmod(os.path.join(root, x), 0o755)
                except OSError:
                    pass
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        print("\n\n".join(failures), file=sys.stderr)
        print(f"{len(failures)} failed", file=sys.stderr)
        return 1
    print("ok: every hostile input was refused with one short message naming it, exit 2, nothing changed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
