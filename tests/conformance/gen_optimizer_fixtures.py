"""Emits tests/fixtures/optimizers.json: parameters after each of a few steps of the reference
optimizers, which tests/optim/test_optimizer.cpp replays through hftrain's optimizers.

  AdamW, SGD (momentum, Nesterov): torch.optim (the Python side of the same torch 2.11)
  Adafactor: transformers.Adafactor with the Trainer's arguments (scale_parameter=False,
             relative_step=False, warmup_init=False), plus beta1 and weight decay variants
  Lion: the published update rule (Chen et al., 2023, Algorithm 2), written out below

Run: .venv/bin/python tests/conformance/gen_optimizer_fixtures.py
"""
import json
import os

import torch
import transformers

torch.manual_seed(0)
SHAPES = {"w": (4, 3), "b": (3,), "v": (5,)}
INIT = {k: torch.randn(s, dtype=torch.float64).float() for k, s in SHAPES.items()}
GRADS = [{k: torch.randn(s, dtype=torch.float64).float() for k, s in SHAPES.items()} for _ in range(6)]
# Two groups: "w" decays, "b" and "v" do not (as hftrain's no_decay defaults would have it).
DECAY = ["w"]
NO_DECAY = ["b", "v"]


class Lion(torch.optim.Optimizer):
    def __init__(self, params, lr, betas=(0.9, 0.99), weight_decay=0.0):
        super().__init__(params, dict(lr=lr, betas=betas, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self):
        for g in self.param_groups:
            b1, b2 = g["betas"]
            for p in g["params"]:
                st = self.state[p]
                if "exp_avg" not in st:
                    st["exp_avg"] = torch.zeros_like(p)
                m = st["exp_avg"]
                update = (m * b1 + p.grad * (1 - b1)).sign()
                p.mul_(1 - g["lr"] * g["weight_decay"])
                p.add_(update, alpha=-g["lr"])
                m.mul_(b2).add_(p.grad, alpha=1 - b2)


def run(make, name, options, lr_factors=None):
    params = {k: torch.nn.Parameter(v.clone()) for k, v in INIT.items()}
    opt = make([{"params": [params[k] for k in DECAY]}, {"params": [params[k] for k in NO_DECAY], "weight_decay": 0.0}])
    base = [g["lr"] for g in opt.param_groups]
    steps = []
    for i, grads in enumerate(GRADS):
        if lr_factors:
            for g, b in zip(opt.param_groups, base):
                g["lr"] = b * lr_factors[i]
        for k, p in params.items():
            p.grad = grads[k].clone()
        opt.step()
        steps.append({k: p.detach().flatten().tolist() for k, p in params.items()})
    return {"name": name, "options": options, "lr_factors": lr_factors, "steps": steps}


def main():
    cases = [
        run(lambda g: torch.optim.AdamW(g, lr=1e-2, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1), "adamw",
            {"lr": 1e-2, "beta1": 0.9, "beta2": 0.95, "eps": 1e-8, "weight_decay": 0.1}),
        run(lambda g: torch.optim.AdamW(g, lr=1e-2, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0), "adamw",
            {"lr": 1e-2, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.0},
            lr_factors=[0.0, 0.5, 1.0, 1.0, 0.7, 0.2]),
        run(lambda g: torch.optim.SGD(g, lr=0.1, momentum=0.9, weight_decay=0.01), "sgd",
            {"lr": 0.1, "momentum": 0.9, "nesterov": False, "weight_decay": 0.01}),
        run(lambda g: torch.optim.SGD(g, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.0), "sgd",
            {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 0.0}),
        run(lambda g: transformers.Adafactor(g, lr=1e-2, scale_parameter=False, relative_step=False,
                                             warmup_init=False), "adafactor",
            {"lr": 1e-2, "weight_decay": 0.0}),
        run(lambda g: transformers.Adafactor(g, lr=1e-2, scale_parameter=False, relative_step=False,
                                             warmup_init=False, beta1=0.9, weight_decay=0.1), "adafactor",
            {"lr": 1e-2, "beta1": 0.9, "weight_decay": 0.1}),
        run(lambda g: Lion(g, lr=1e-3, betas=(0.9, 0.99), weight_decay=0.5), "lion",
            {"lr": 1e-3, "beta1": 0.9, "beta2": 0.99, "weight_decay": 0.5}),
    ]
    out = {"torch": torch.__version__, "transformers": transformers.__version__,
           "init": {k: v.flatten().tolist() for k, v in INIT.items()},
           "shapes": {k: list(s) for k, s in SHAPES.items()},
           "grads": [{k: g.flatten().tolist() for k, g in gs.items()} for gs in GRADS],
           "decay": DECAY, "no_decay": NO_DECAY, "cases": cases}
    path = os.path.join(os.path.dirname(__file__), "..", "fixtures", "optimizers.json")
    with open(path, "w") as f:
        json.dump(out, f)
    print(f"wrote {os.path.normpath(path)}")


if __name__ == "__main__":
    main()
