"""What the optimizer fixture generators share (gen_galore_fixtures.py, gen_apollo_fixtures.py,
gen_muon_fixtures.py): random parameters, a random gradient per parameter and step ("late" gets none
before LATE_FROM), and every tensor recorded under <case>/init/<name>, <case>/grad/<step>/<name>
(steps from 0) and <case>/param/<step>/<name> (after step <step>, from 1)."""
import torch


def replay(case_name, shapes, seed, make_step, out, steps, late_from, after_step=None):
    """Seeds torch with `seed`, makes the parameters of `shapes`, and runs `steps` steps of the
    optimizer `make_step(params)` returns (a function that steps it). `after_step(step, name, param)`
    records more after each step (step from 1)."""
    torch.manual_seed(seed)
    params = {k: torch.nn.Parameter(torch.randn(s)) for k, s in shapes.items()}
    for k, p in params.items():
        out[f"{case_name}/init/{k}"] = p.detach().clone()
    step_fn = make_step(params)
    for step in range(steps):
        for k, p in params.items():
            if k == "late" and step < late_from:
                p.grad = None
                continue
            p.grad = torch.randn(p.shape)
            out[f"{case_name}/grad/{step}/{k}"] = p.grad.clone()
        step_fn()
        for k, p in params.items():
            out[f"{case_name}/param/{step + 1}/{k}"] = p.detach().clone()
            if after_step:
                after_step(step + 1, k, p)
