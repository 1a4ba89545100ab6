"""Emits tests/fixtures/hf_schedules.json: learning rates from the real Hugging Face schedulers
(transformers.get_scheduler and torch's ReduceLROnPlateau), which tests/optim/test_lr_schedule.cpp
compares hftrain's schedules against. Run with the project's venv after `pip install transformers`:

    .venv/bin/python tests/conformance/gen_schedule_fixtures.py
"""
import json
import os

import torch
import transformers
from transformers import get_scheduler

BASE_LR = 0.01
CASES = [
    # (name, warmup, total, scheduler_specific_kwargs)
    ("constant", 0, 20, {}),
    ("constant_with_warmup", 5, 20, {}),
    ("linear", 0, 20, {}),
    ("linear", 7, 30, {}),
    ("cosine", 4, 25, {}),
    ("cosine", 3, 25, {"num_cycles": 1.5}),
    ("cosine_with_restarts", 4, 40, {}),
    ("cosine_with_restarts", 2, 40, {"num_cycles": 3}),
    ("cosine_with_min_lr", 5, 30, {"min_lr_rate": 0.1}),
    ("cosine_with_min_lr", 5, 30, {"min_lr": 0.002}),
    ("polynomial", 5, 30, {}),
    ("polynomial", 3, 30, {"power": 2.0, "lr_end": 1e-4}),
    ("inverse_sqrt", 10, 40, {}),
    ("inverse_sqrt", 0, 40, {"timescale": 7}),
    ("warmup_stable_decay", 5, 40, {"num_decay_steps": 10}),
    ("warmup_stable_decay", 4, 40, {"num_decay_steps": 12, "num_stable_steps": 10, "warmup_type": "cosine",
                                    "decay_type": "1-sqrt", "min_lr_ratio": 0.05}),
    ("warmup_stable_decay", 6, 30, {"num_decay_steps": 8, "warmup_type": "1-sqrt", "decay_type": "linear"}),
]


def run_case(name, warmup, total, kwargs):
    param = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([param], lr=BASE_LR)
    sched = get_scheduler(name, opt, num_warmup_steps=warmup, num_training_steps=total,
                          scheduler_specific_kwargs=kwargs)
    lrs = []
    for _ in range(total + 5):  # a few steps past the end, too
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return lrs


def plateau_case(kwargs, metrics):
    param = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([param], lr=BASE_LR)
    sched = get_scheduler("reduce_lr_on_plateau", opt, scheduler_specific_kwargs=kwargs)
    lrs = []
    for m in metrics:
        sched.step(m)
        lrs.append(opt.param_groups[0]["lr"])
    return lrs


def main():
    out = {"transformers": transformers.__version__, "torch": torch.__version__, "base_lr": BASE_LR,
           "schedules": [], "plateau": []}
    for name, warmup, total, kwargs in CASES:
        out["schedules"].append({"name": name, "warmup_steps": warmup, "total_steps": total,
                                 "kwargs": kwargs, "lr": run_case(name, warmup, total, kwargs)})
    metrics = [5.0, 4.0, 4.1, 4.0, 3.9999, 4.2, 4.3, 3.5, 3.6, 3.7, 3.8, 3.9, 3.2, 3.3, 3.4, 3.5, 3.6]
    for kwargs in [{"patience": 2}, {"patience": 1, "factor": 0.5, "cooldown": 2, "min_lr": 0.003},
                   {"mode": "max", "patience": 1, "threshold": 0.05, "threshold_mode": "abs"}]:
        out["plateau"].append({"kwargs": kwargs, "metrics": metrics, "lr": plateau_case(kwargs, metrics)})
    path = os.path.join(os.path.dirname(__file__), "..", "fixtures", "hf_schedules.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    print(f"wrote {os.path.normpath(path)}")


if __name__ == "__main__":
    main()
