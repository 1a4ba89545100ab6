"""Emits tests/fixtures/ema.safetensors: the weights and diffusers' EMAModel average of them after each
step of torch.optim.AdamW (fused, ATen's kernel as hftrain's), which tests/optim/test_ema.cpp replays
through hftrain's EMA weights (lib/optim/ema.h).

The parameters are optimizer_replay.py's ("late" has no gradient before step 3; the average still
follows it). One case per warm-up: inverse (diffusers' default), power (use_ema_warmup) with
update_after_step and min_decay, none (the decay from the first update), and inverse updated every
second step (EMAModel.step called after every other optimizer step).

Tensors: <case>/init/<name>, <case>/grad/<step>/<name> (steps from 0), <case>/param/<step>/<name> and
<case>/ema/<step>/<name> (after step <step>, from 1). Metadata "fixture": the cases, steps, shapes.

Run: .venv/bin/python tests/conformance/gen_ema_fixtures.py (needs diffusers: pip install --no-deps diffusers)
"""
import json
import os
import sys

import torch
from diffusers.training_utils import EMAModel
from safetensors.torch import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from optimizer_replay import replay  # noqa: E402

OUT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "ema.safetensors"))
STEPS = 8
LATE_FROM = 3
SHAPES = {"matrix": [12, 8], "bias": [10], "late": [5, 7]}
ADAMW = {"lr": 0.05, "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0.1}
CASES = {
    "inverse": {"decay": 0.999, "min_decay": 0.0, "update_after_step": 0, "warmup": "inverse", "inv_gamma": 1.0,
                "power": 2 / 3, "every": 1},
    "power": {"decay": 0.9, "min_decay": 0.3, "update_after_step": 2, "warmup": "power", "inv_gamma": 2.0,
              "power": 0.75, "every": 1},
    "none": {"decay": 0.8, "min_decay": 0.0, "update_after_step": 0, "warmup": "none", "inv_gamma": 1.0,
             "power": 2 / 3, "every": 1},
    "inverse_every_2": {"decay": 0.999, "min_decay": 0.0, "update_after_step": 0, "warmup": "inverse",
                        "inv_gamma": 1.0, "power": 2 / 3, "every": 2},
}


def run(case_name, c, out):
    holder = {}

    def make_step(params):
        ordered = list(params.values())
        adamw = torch.optim.AdamW(ordered, lr=ADAMW["lr"], betas=tuple(ADAMW["betas"]), eps=ADAMW["eps"],
                                  weight_decay=ADAMW["weight_decay"], fused=True)
        ema = EMAModel(ordered, decay=c["decay"], min_decay=c["min_decay"], update_after_step=c["update_after_step"],
                       use_ema_warmup=c["warmup"] == "power", inv_gamma=c["inv_gamma"], power=c["power"])
        if c["warmup"] == "none":
            # diffusers has no constant decay; its warm-up formula is replaced by the decay itself.
            def constant(optimization_step):
                step = max(0, optimization_step - ema.update_after_step - 1)
                return 0.0 if step <= 0 else max(ema.decay, ema.min_decay)
            ema.get_decay = constant
        holder["ema"], holder["names"] = ema, list(params.keys())
        count = [0]

        def step():
            adamw.step()
            count[0] += 1
            if count[0] % c["every"] == 0:
                ema.step(ordered)
        return step

    def after_step(step, name, _param):
        shadow = holder["ema"].shadow_params[holder["names"].index(name)]
        out[f"{case_name}/ema/{step}/{name}"] = shadow.detach().clone()

    replay(case_name, SHAPES, len(case_name), make_step, out, STEPS, LATE_FROM, after_step)


def main():
    out = {}
    for name, c in CASES.items():
        run(name, c, out)
    fixture = {"cases": CASES, "adamw": ADAMW, "steps": STEPS, "late_from": LATE_FROM, "shapes": SHAPES,
               "cpu_capability": torch.backends.cpu.get_cpu_capability()}
    save_file(out, OUT, metadata={"fixture": json.dumps(fixture)})
    print(f"wrote {OUT}: {len(out)} tensors")


if __name__ == "__main__":
    main()
