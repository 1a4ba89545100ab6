"""Emits tests/fixtures/galore_adamw.safetensors: parameters after each step of galore_torch's
GaLoreAdamW (galore_torch 1.0 on PyPI), which tests/optim/test_galore.cpp replays through
hftrain's GaLore AdamW (lib/optim/galore_adamw.h).

One case per projection type (std, reverse_std, right, left, full). Each has a tall matrix "tall"
(12 x 8) and a wide one "wide" (6 x 10), both projected (rank 3, a new projection every 2 steps,
scale 0.25), in a group with weight decay, and a vector "bias" in a group without projection or
weight decay (plain AdamW in galore_torch's form). "late" (5 x 7, projected) has no gradient before
step 3: its projection is first computed at its own step 0. The case "rank_above" projects with a
rank larger than the smaller side of every matrix.

Tensors: <case>/init/<name>, <case>/grad/<step>/<name> (steps from 0), <case>/param/<step>/<name>
(after step <step>, from 1), and for the projected matrices <case>/ortho/<step>/<name> (and
<case>/ortho_right/<step>/<name> for full): the projection galore_torch used in that step. The signs
of singular vectors are LAPACK's choice and differ between its code paths (MKL on another CPU,
MKL_CBWR=COMPATIBLE); galore_torch does not rotate its moments when the projection changes, so
the trajectory depends on them, and the test needs to know which signs this fixture saw.

Run: .venv/bin/python tests/conformance/gen_galore_fixtures.py  (pip install --no-deps galore-torch)
"""
import importlib.metadata
import json
import os
import sys

import torch
from galore_torch import GaLoreAdamW
from safetensors.torch import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from optimizer_replay import replay  # noqa: E402

OUT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures",
                                   "galore_adamw.safetensors"))
STEPS = 7
LATE_FROM = 3
SHAPES = {"tall": [12, 8], "wide": [6, 10], "late": [5, 7], "bias": [10]}
PROJECTED = ["tall", "wide", "late"]
BASE = {"lr": 0.01, "betas": [0.9, 0.999], "eps": 1e-6, "weight_decay": 0.1, "rank": 3,
        "update_proj_gap": 2, "scale": 0.25}
CASES = {name: dict(BASE, proj_type=name) for name in ["std", "reverse_std", "right", "left", "full"]}
CASES["rank_above"] = dict(BASE, proj_type="std", rank=16)


def run(case_name, c, out):
    opt = None

    def make_step(params):
        nonlocal opt
        opt = GaLoreAdamW(
            [{"params": [params[k] for k in PROJECTED], "rank": c["rank"], "update_proj_gap": c["update_proj_gap"],
              "scale": c["scale"], "proj_type": c["proj_type"], "weight_decay": c["weight_decay"]},
             {"params": [params["bias"]], "weight_decay": 0.0}],
            lr=c["lr"], betas=tuple(c["betas"]), eps=c["eps"], no_deprecation_warning=True)
        return opt.step

    def record_projection(step, k, p):  # the projection galore_torch used in that step
        projector = opt.state[p].get("projector") if k in PROJECTED else None
        if projector is None:
            return
        ortho = projector.ortho_matrix
        if isinstance(ortho, list):
            out[f"{case_name}/ortho/{step}/{k}"] = ortho[0].contiguous().clone()
            out[f"{case_name}/ortho_right/{step}/{k}"] = ortho[1].contiguous().clone()
        else:
            out[f"{case_name}/ortho/{step}/{k}"] = ortho.contiguous().clone()
    replay(case_name, SHAPES, len(case_name) + 1, make_step, out, STEPS, LATE_FROM, record_projection)


def main():
    out = {}
    for name, c in CASES.items():
        run(name, c, out)
    # One metadata key: safetensors writes several in no fixed order.
    fixture = {"cases": CASES, "steps": STEPS, "late_from": LATE_FROM, "shapes": SHAPES, "projected": PROJECTED,
               "galore_torch": importlib.metadata.version("galore-torch"), "torch": torch.__version__,
               # The vector width of ATen's CPU kernels: another width rounds some operations apart.
               "cpu_capability": torch.backends.cpu.get_cpu_capability()}
    save_file(out, OUT, metadata={"fixture": json.dumps(fixture)})
    print(OUT, os.path.getsize(OUT), "bytes,", len(out), "tensors")


if __name__ == "__main__":
    main()
