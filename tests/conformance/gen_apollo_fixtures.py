"""Emits tests/fixtures/apollo_adamw.safetensors: parameters after each step of apollo-torch's
APOLLOAdamW (apollo-torch 1.0 on PyPI), which tests/optim/test_apollo.cpp replays through hftrain's
APOLLO AdamW (lib/optim/apollo_adamw.h).

Each case has a tall matrix "tall" (12 x 8) and a wide one "wide" (6 x 10), both targeted (rank 3, a
new random projection every 2 steps), in a group with weight decay, and a vector "bias" in a group
without targets or weight decay (the legacy AdamW step). "late" (5 x 7, targeted) has no gradient
before step 3: its projection is first drawn at its own step 0. The cases: channel scaling (std);
APOLLO-Mini's tensor scaling (rank 1, scale 128); scale_front; without the norm-growth limiter;
tensor scaling with reverse_std. Seeds are apollo-torch's: each parameter's 1-based position in the
groups (tall 1, wide 2, late 3, bias 4).

Tensors: <case>/init/<name>, <case>/grad/<step>/<name> (steps from 0), <case>/param/<step>/<name>
(after step <step>, from 1).

Run: .venv/bin/python tests/conformance/gen_apollo_fixtures.py  (pip install --no-deps apollo-torch)
"""
import importlib.metadata
import json
import os
import sys

import torch
from apollo_torch import APOLLOAdamW
from safetensors.torch import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from optimizer_replay import replay  # noqa: E402

OUT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures",
                                   "apollo_adamw.safetensors"))
STEPS = 7
LATE_FROM = 3
SHAPES = {"tall": [12, 8], "wide": [6, 10], "late": [5, 7], "bias": [10]}
TARGETED = ["tall", "wide", "late"]
BASE = {"lr": 0.01, "betas": [0.9, 0.999], "eps": 1e-6, "weight_decay": 0.1, "rank": 3, "update_proj_gap": 2,
        "scale": 1.0, "scale_type": "channel", "proj_type": "std", "scale_front": False, "disable_nl": False}
CASES = {
    "channel": dict(BASE),
    "mini": dict(BASE, rank=1, scale=128.0, scale_type="tensor"),
    "scale_front": dict(BASE, scale=4.0, scale_front=True),
    "no_limiter": dict(BASE, disable_nl=True),
    "tensor_reverse_std": dict(BASE, scale_type="tensor", proj_type="reverse_std"),
}


def run(case_name, c, out):
    def make_step(params):
        opt = APOLLOAdamW(
            [{"params": [params[k] for k in TARGETED], "rank": c["rank"], "proj": "random",
              "scale_type": c["scale_type"], "update_proj_gap": c["update_proj_gap"], "scale": c["scale"],
              "proj_type": c["proj_type"], "weight_decay": c["weight_decay"]},
             {"params": [params["bias"]], "weight_decay": 0.0}],
            lr=c["lr"], betas=tuple(c["betas"]), eps=c["eps"], scale_front=c["scale_front"],
            disable_nl=c["disable_nl"])
        return opt.step
    replay(case_name, SHAPES, len(case_name) + 1, make_step, out, STEPS, LATE_FROM)


def main():
    out = {}
    for name, c in CASES.items():
        run(name, c, out)
    fixture = {"cases": CASES, "steps": STEPS, "late_from": LATE_FROM, "shapes": SHAPES, "targeted": TARGETED,
               "apollo_torch": importlib.metadata.version("apollo-torch"), "torch": torch.__version__,
               "cpu_capability": torch.backends.cpu.get_cpu_capability()}
    save_file(out, OUT, metadata={"fixture": json.dumps(fixture)})
    print(OUT, os.path.getsize(OUT), "bytes,", len(out), "tensors")


if __name__ == "__main__":
    main()
