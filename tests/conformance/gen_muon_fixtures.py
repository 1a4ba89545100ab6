"""Emits tests/fixtures/muon.safetensors: parameters after each step of torch.optim.Muon (PyTorch 2.9+)
for the hidden matrices, with torch.optim.AdamW for the other parameters (Muon's usual pairing),
which tests/optim/test_muon.cpp replays through hftrain's Muon (lib/optim/muon.h).

The reference model's parameters: "tall" (12 x 8) and "wide" (6 x 10) matrices; "q" (8 x 8), "k" and
"v" (4 x 8 each), which hftrain holds stacked by rows as one 16 x 8 parameter (its fused qkv_proj);
"conv" (8 x 20), which hftrain holds transposed (GPT-2's Conv1D weights); "late" (5 x 7), without a
gradient before step 3. AdamW updates "embed" (15 x 8, a matrix that Muon leaves alone) and "bias"
(10). One case per Muon setting: nesterov with the original lr adjustment and weight decay, and
plain momentum with match_rms_adamw and none.

Tensors: <case>/init/<name>, <case>/grad/<step>/<name> (steps from 0), <case>/param/<step>/<name>
(after step <step>, from 1).

Run: .venv/bin/python tests/conformance/gen_muon_fixtures.py
"""
import json
import os
import sys

import torch
from safetensors.torch import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from optimizer_replay import replay  # noqa: E402

OUT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "muon.safetensors"))
STEPS = 6
LATE_FROM = 3
SHAPES = {"tall": [12, 8], "wide": [6, 10], "q": [8, 8], "k": [4, 8], "v": [4, 8], "conv": [8, 20], "late": [5, 7],
          "embed": [15, 8], "bias": [10]}
MUON = ["tall", "wide", "q", "k", "v", "conv", "late"]
ADAMW = ["embed", "bias"]
BASE = {"lr": 0.02, "momentum": 0.95, "ns_steps": 5, "eps": 1e-7, "betas": [0.9, 0.999], "adam_eps": 1e-8}
CASES = {
    "nesterov_original": dict(BASE, nesterov=True, adjust_lr_fn="original", weight_decay=0.1),
    "momentum_match_rms": dict(BASE, nesterov=False, adjust_lr_fn="match_rms_adamw", weight_decay=0.0),
}


def run(case_name, c, out):
    def make_step(params):
        muon = torch.optim.Muon([params[k] for k in MUON], lr=c["lr"], weight_decay=c["weight_decay"],
                                momentum=c["momentum"], nesterov=c["nesterov"], eps=c["eps"], ns_steps=c["ns_steps"],
                                adjust_lr_fn=c["adjust_lr_fn"])
        adamw = torch.optim.AdamW([params[k] for k in ADAMW], lr=c["lr"], betas=tuple(c["betas"]),
                                  eps=c["adam_eps"], weight_decay=c["weight_decay"])

        def step():
            muon.step()
            adamw.step()
        return step
    replay(case_name, SHAPES, len(case_name), make_step, out, STEPS, LATE_FROM)


def main():
    out = {}
    for name, c in CASES.items():
        run(name, c, out)
    fixture = {"cases": CASES, "steps": STEPS, "late_from": LATE_FROM, "shapes": SHAPES, "muon": MUON,
               "adamw": ADAMW, "torch": torch.__version__,
               "cpu_capability": torch.backends.cpu.get_cpu_capability()}
    save_file(out, OUT, metadata={"fixture": json.dumps(fixture)})
    print(OUT, os.path.getsize(OUT), "bytes,", len(out), "tensors")


if __name__ == "__main__":
    main()
