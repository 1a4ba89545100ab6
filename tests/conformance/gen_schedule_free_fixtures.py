"""Emits tests/fixtures/schedule_free.safetensors: parameters after each step of the schedulefree
package's AdamWScheduleFree (its default multi-tensor path), which tests/optim/test_schedule_free.cpp
replays through hftrain's Schedule-Free AdamW (lib/optim/schedule_free_adamw.h).

Cases (their settings in the file's metadata: JSON under "fixture", "cases"):
  switching  warmup, r > 0, a changing lr; after every step the parameters are read in train mode
             (y), then optimizer.eval() (x), then optimizer.train() again, as a loop that evaluates
             every step would
  steady     the package's defaults (no warmup, r = 0), a bf16 parameter; train mode throughout,
             x read once after the last step

Parameters in two groups, "w" and "late" with weight decay; "late" has no gradient before step 3
and "never" none at all.

Tensors: <case>/init/<name>, <case>/grad/<step>/<name> (steps from 0), <case>/y/<step>/<name> and
<case>/x/<step>/<name> (after step <step>, from 1).

Run: .venv/bin/python tests/conformance/gen_schedule_free_fixtures.py  (pip install schedulefree)
"""
import importlib.metadata
import json
import os

import schedulefree
import torch
from safetensors.torch import save_file

OUT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures",
                                   "schedule_free.safetensors"))
STEPS = 10
LATE_FROM = 3

CASES = {
    "switching": {
        "lr": 0.02, "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0.05,
        "warmup_steps": 4, "r": 0.5, "weight_lr_power": 2.0,
        "lr_factors": [1.0, 1.0, 0.9, 0.9, 0.8, 0.8, 0.7, 0.7, 0.6, 0.6],
        "switch_every_step": True,
        "shapes": {"w": [4, 3], "late": [2, 3], "b": [3], "v": [5], "never": [2]},
        "dtypes": {},
    },
    "steady": {
        "lr": 0.0025, "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0.01,
        "warmup_steps": 0, "r": 0.0, "weight_lr_power": 2.0,
        "lr_factors": [1.0] * STEPS,
        "switch_every_step": False,
        "shapes": {"w": [4, 3], "late": [2, 3], "b": [3], "h": [3, 4], "never": [2]},
        "dtypes": {"h": "bf16"},
    },
}
DECAY = ["w", "late"]


def run(case_name, c, out):
    torch.manual_seed(len(case_name))
    dtype = {k: (torch.bfloat16 if c["dtypes"].get(k) == "bf16" else torch.float32) for k in c["shapes"]}
    params = {k: torch.nn.Parameter(torch.randn(s).to(dtype[k])) for k, s in c["shapes"].items()}
    for k, p in params.items():
        out[f"{case_name}/init/{k}"] = p.detach().clone()
    decay = [params[k] for k in params if k in DECAY]
    rest = [params[k] for k in params if k not in DECAY]
    opt = schedulefree.AdamWScheduleFree(
        [{"params": decay, "weight_decay": c["weight_decay"]}, {"params": rest, "weight_decay": 0.0}],
        lr=c["lr"], betas=tuple(c["betas"]), eps=c["eps"], warmup_steps=c["warmup_steps"], r=c["r"],
        weight_lr_power=c["weight_lr_power"])
    opt.train()
    for step in range(STEPS):
        for g in opt.param_groups:
            g["lr"] = c["lr"] * c["lr_factors"][step]
        for k, p in params.items():
            if k == "never" or (k == "late" and step < LATE_FROM):
                p.grad = None
                continue
            p.grad = torch.randn(p.shape).to(p.dtype)
            out[f"{case_name}/grad/{step}/{k}"] = p.grad.clone()
        opt.step()
        for k, p in params.items():
            out[f"{case_name}/y/{step + 1}/{k}"] = p.detach().clone()
        if c["switch_every_step"] or step == STEPS - 1:
            opt.eval()
            for k, p in params.items():
                out[f"{case_name}/x/{step + 1}/{k}"] = p.detach().clone()
            opt.train()


def main():
    out = {}
    for name, c in CASES.items():
        run(name, c, out)
    # One metadata key: safetensors writes several in no fixed order.
    fixture = {"cases": CASES, "steps": STEPS, "late_from": LATE_FROM, "decay": DECAY,
               "schedulefree": importlib.metadata.version("schedulefree"), "torch": torch.__version__,
               # The vector width of ATen's CPU kernels: another width rounds some operations apart.
               "cpu_capability": torch.backends.cpu.get_cpu_capability()}
    save_file(out, OUT, metadata={"fixture": json.dumps(fixture)})
    print(OUT, os.path.getsize(OUT), "bytes,", len(out), "tensors")


if __name__ == "__main__":
    main()
