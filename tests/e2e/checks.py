#!/usr/bin/env python3
"""The Python checks of the end-to-end scripts (tests/e2e/*_test.sh), one subcommand each.

    checks.py NAME ARGS...     run one check: exit 0 when it holds, 1 (an AssertionError) when not
    checks.py --help           the checks; checks.py NAME --help: its arguments
    checks.py --self-test      each check against made-up files that must pass and must fail, every
                               help text, every `check_py NAME` of the scripts names a check here,
                               and every script of tests/e2e parses (bash -n)

The scripts call them through harness.sh's `check_py NAME ARGS...`. A few print a value the script
uses (metric, best-eval-step, sweep-statuses); the comparisons print their largest difference to
stderr. Only the standard library at the top: the comparisons of runs also run on a GPU machine
without numpy or safetensors; the checks that need torch, safetensors or mlflow import them inside.
"""
import argparse
import array
import collections
import glob
import json
import math
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

CHECKS = {}  # name -> (function, help, [(argument, help, nargs)])


def check(name, help, *arguments):
    """Registers a check: `arguments` are (name, help) or (name, help, nargs) of its positionals."""
    def register(function):
        CHECKS[name] = (function, help, [a if len(a) == 3 else (a[0], a[1], None) for a in arguments])
        return function
    return register


def records(path):
    return [json.loads(line) for line in open(path)]


# --- comparisons of two runs (compare.sh: dist_test, tp_test, pp_test, gpu_test)

@check("close", "training loss and grad_norm of two runs agree within TOL relative at every step FROM..TO; "
       "prints the largest difference",
       ("a", "metrics.jsonl of run A"), ("b", "metrics.jsonl of run B"), ("lo", "first step"), ("hi", "last step"),
       ("tol", "relative tolerance (1e-5)", "?"))
def close(a, b, lo, hi, tol="1e-5"):
    def load(path):
        return {r["step"]: r for r in map(json.loads, open(path)) if "loss" in r and "eval_loss" not in r}
    path_a, path_b = a, b
    a, b, lo, hi, tol = load(path_a), load(path_b), int(lo), int(hi), float(tol)
    worst = 0.0
    for step in range(lo, hi + 1):
        assert step in a and step in b, f"step {step} missing"
        for key in ("loss", "grad_norm"):
            x, y = a[step][key], b[step][key]
            rel = abs(x - y) / max(abs(x), abs(y), 1e-30)
            worst = max(worst, rel)
            assert rel <= tol, f"step {step} {key}: {x} vs {y}"
    print(f"  {path_a.split('/')[-2]} vs {path_b.split('/')[-2]}, steps {lo}-{hi}: largest relative difference {worst:.3g}",
          file=sys.stderr)


def load_f32_safetensors(path):
    """float32 tensors of a safetensors file, by name, with the standard library only."""
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", f"{name}: {info['dtype']}"
        begin, end = info["data_offsets"]
        out[name] = array.array("f", raw[8 + n + begin:8 + n + end])
    return out


@check("same-weights", "two final models agree within TOL relative: the L2 norm of the difference over all weights "
       "over the L2 norm of the weights (not per tensor: the attention's key bias has a zero gradient in exact "
       "arithmetic, so Adam turns rounding noise there into different updates, about 1e-5 of that tensor's size)",
       ("a", "model.safetensors of run A"), ("b", "model.safetensors of run B"),
       ("tol", "relative tolerance (1e-5)", "?"))
def same_weights(a, b, tol="1e-5"):
    a, b, tol = load_f32_safetensors(a), load_f32_safetensors(b), float(tol)
    assert a.keys() == b.keys()
    diff = sum((x - y) ** 2 for k in a for x, y in zip(a[k], b[k])) ** 0.5
    norm = sum(x * x for k in a for x in a[k]) ** 0.5
    print(f"  final weights differ by {diff / norm:.3g} relative", file=sys.stderr)
    assert diff <= tol * norm, f"weights differ by {diff / norm:.3g} relative"


# --- run_test.sh

@check("run-metrics", "a short run's metrics.jsonl: the step and eval fields, and the loss fell by 20%",
       ("metrics", "metrics.jsonl"))
def run_metrics(metrics):
    rows = records(metrics)
    steps = [r for r in rows if "loss" in r]
    evals = [r for r in rows if "eval_loss" in r]
    need = {"step", "epoch", "loss", "lr", "grad_norm", "tokens_seen", "tokens_per_s", "step_time_ms", "data_wait_ms",
            "peak_mem_mb"}
    assert steps and need <= set(steps[0]), set(steps[0])
    assert evals and {"eval_loss", "eval_ppl"} <= set(evals[0])
    assert steps[-1]["loss"] < steps[0]["loss"] * 0.8, (steps[0]["loss"], steps[-1]["loss"])


@check("loss-falls", "the last logged training loss is below 90% of the first", ("metrics", "metrics.jsonl"))
def loss_falls(metrics):
    losses = [r["loss"] for r in records(metrics) if "loss" in r]
    assert len(losses) >= 2 and losses[-1] < 0.9 * losses[0], losses


@check("losses-differ", "two runs logged different training losses at step STEP",
       ("a", "metrics.jsonl of run A"), ("b", "metrics.jsonl of run B"), ("step", "the step"))
def losses_differ(a, b, step):
    def loss(path):
        return [r["loss"] for r in records(path) if "loss" in r and r["step"] == int(step)][0]
    assert loss(a) != loss(b), (loss(a), loss(b))


@check("mixture-metrics", "a mixture of cookies (0.25) and mixchat (0.75): per-source tokens, epochs and "
       "evaluations, and mixchat's share of the tokens in (0.6, 0.9)", ("metrics", "metrics.jsonl"))
def mixture_metrics(metrics):
    rows = records(metrics)
    steps = [r for r in rows if r.get("type") == "train"]
    evals = [r for r in rows if r.get("type") == "eval"]
    last = steps[-1]
    for name in ("cookies", "mixchat"):
        assert last[f"data/{name}/tokens"] > 0 and last[f"data/{name}/epoch"] > 0, last
        assert f"eval/{name}/loss" in evals[-1], evals[-1]
    share = last["data/mixchat/tokens"] / (last["data/mixchat/tokens"] + last["data/cookies/tokens"])
    assert 0.6 < share < 0.9, share


# --- resume_test.sh and restart_test.sh: histories bit for bit

def history(path):
    """(step, 'step'|'eval') -> the values as written, each key once."""
    rows = {}
    for line in open(path):
        r = json.loads(line)
        key = (r["step"], "eval" if "eval_loss" in r else "step")
        assert key not in rows, f"{path}: step {key} twice"
        rows[key] = {k: r[k] for k in ("loss", "lr", "grad_norm", "eval_loss", "tokens_seen") if k in r}
    return rows


@check("same-history", "two runs hold identical loss, lr, grad_norm, eval_loss and tokens_seen values (as written: "
       "bit for bit) for every step FROM..TO, each step once, and B's history ends at TO",
       ("a", "metrics.jsonl of run A"), ("b", "metrics.jsonl of run B"), ("lo", "first step"), ("hi", "last step"))
def same_history(a, b, lo, hi):
    a, b, lo, hi = history(a), history(b), int(lo), int(hi)
    for step in range(lo, hi + 1):
        for kind in ("step", "eval"):
            ka = a.get((step, kind))
            kb = b.get((step, kind))
            if kind == "step":
                assert ka is not None and kb is not None, f"step {step} missing"
            assert ka == kb, f"step {step} {kind}: {ka} != {kb}"
    assert max(s for s, _ in b) == hi, f"history runs past {hi}"


@check("mixture-counts", "the last train records of two runs hold the same 4 per-source counts (data/...)",
       ("a", "metrics.jsonl of run A"), ("b", "metrics.jsonl of run B"))
def mixture_counts(a, b):
    def last(p):
        return [json.loads(line) for line in open(p) if '"train"' in line][-1]
    a, b = last(a), last(b)
    keys = [k for k in a if k.startswith("data/")]
    assert len(keys) == 4 and all(a[k] == b[k] for k in keys), (a, b)


@check("best-eval-step", "prints the step of the best evaluation by KEY (eval_loss), the highest with 'max' "
       "(the earliest of equals; evaluations at step 0 do not rank)",
       ("metrics", "metrics.jsonl"), ("key", "the figure (eval_loss)", "?"), ("way", "min or max (min)", "?"))
def best_eval_step(metrics, key="eval_loss", way="min"):
    rows = [r for r in records(metrics) if "eval_loss" in r and r["step"] > 0]
    sign = -1 if way == "max" else 1
    print(min(rows, key=lambda r: (sign * r[key], r["step"]))["step"])


@check("eval-steps", "prints the steps of the evaluations, in order", ("metrics", "metrics.jsonl"))
def eval_steps(metrics):
    print(" ".join(str(r["step"]) for r in records(metrics) if "eval_loss" in r))


@check("last-eval-equals", "the last evaluation of a run logged eval_loss equal (1e-9 relative) to that of an "
       "evaluate --output JSON", ("metrics", "metrics.jsonl"), ("output", "hftrain evaluate's JSON"))
def last_eval_equals(metrics, output):
    logged = [r for r in records(metrics) if "eval_loss" in r][-1]["eval_loss"]
    got = json.load(open(output))["eval_loss"]
    assert abs(logged - got) <= 1e-9 * abs(logged), (logged, got)


@check("same-run", "two runs of 12 steps with 3 evaluations hold the same values (as written: bit for bit) for "
       "every step and evaluation, each once", ("a", "metrics.jsonl of run A"), ("b", "metrics.jsonl of run B"))
def same_run(a, b):
    a, b = history(a), history(b)
    assert len(a) == 15, f"{len(a)} records, expected 12 steps and 3 evaluations"
    bad = [k for k in sorted(a) if a[k] != b.get(k)]
    assert not bad and a.keys() == b.keys(), \
        f"first difference at {bad[0]}: {a[bad[0]]} vs {b.get(bad[0])}; all: {bad}" if bad else sorted(set(b) ^ set(a))


# --- dist_test.sh

@check("memory-matches", "each rank's 'memory on rank' line: parameters, gradients and optimizer state equal the "
       "ZeRO formula within that rank's reported buffers (the padding of the buckets)",
       ("run_dir", "the run directory (its train*.log)"), ("ranks", "the number of ranks (2)", "?"))
def memory_matches(run_dir, ranks="2"):
    lines = [line for f in glob.glob(run_dir + "/train*.log") for line in open(f) if "memory on rank" in line]
    assert len(lines) == int(ranks), f"{len(lines)} memory lines"
    for line in lines:
        buffers = int(re.search(r"buffers (\d+) B", line).group(1))
        for what in ("parameters", "gradients", "optimizer state"):
            have, want = map(int, re.search(what + r" (\d+) B \([^;]*; formula (\d+) B\)", line).groups())
            assert abs(have - want) <= buffers, f"{what}: {have} B, formula {want} B, buffers {buffers} B: {line}"


@check("one-writer", "rank 0 alone writes metrics: one record per step, one event file",
       ("run_dir", "the run directory"))
def one_writer(run_dir):
    recs = records(run_dir + "/metrics.jsonl")
    counts = collections.Counter((r["type"], r["step"]) for r in recs if r["type"] in ("train", "eval"))
    twice = [k for k, n in counts.items() if n > 1]
    assert not twice, f"records written more than once: {twice[:5]}"
    events = glob.glob(run_dir + "/events.out.tfevents.*")
    assert len(events) == 1, f"{len(events)} event files: {events}"


@check("entity-metrics", "token classification: two runs' evaluations hold the same entity-level precision, "
       "recall, F1 and accuracy (1e-9)", ("a", "run directory A"), ("b", "run directory B"))
def entity_metrics(a, b):
    evals = [[r for r in map(json.loads, open(d + "/metrics.jsonl")) if r["type"] == "eval"] for d in (a, b)]
    keys = ("eval_precision", "eval_recall", "eval_f1", "eval_accuracy")
    assert len(evals[0]) == len(evals[1]) > 0, [len(e) for e in evals]
    for x, y in zip(*evals):
        for k in keys:
            assert abs(x[k] - y[k]) <= 1e-9, (k, x[k], y[k])
    print("entity metrics on 1 and 2 ranks:", [(r["step"], round(r["eval_f1"], 4)) for r in evals[1]])


# --- tp_test.sh and pp_test.sh: plan against the run, dropout, evaluations

def run_psi(train_log, expect):
    line = next(line for line in open(train_log) if "memory on rank 0" in line)
    assert expect in line, line
    return int(re.search(r"Ψ = (\d+),", line).group(1))


@check("tp-plan-psi", "`hftrain plan`'s Ψ per rank at tensor parallel 2 is the run's rank 0's",
       ("plan_out", "plan's stdout (the text itself)"), ("train_log", "the tp=2 run's train.log"))
def tp_plan_psi(plan_out, train_log):
    planned = int(re.search(r"tensor parallel 2: Ψ per rank = \d+ split / 2 \+ \d+ whole on every rank = (\d+)",
                            plan_out).group(1))
    held = run_psi(train_log, "tensor parallel 2: Ψ = this rank's pieces")
    print(f"  plan: Ψ per rank {planned}; the run's rank 0: {held}", file=sys.stderr)
    assert planned == held, (planned, held)


@check("pp-plan-psi", "`hftrain plan`'s stage 0 Ψ is the pipelined run's rank 0's",
       ("plan_out", "plan's stdout (the text itself)"), ("train_log", "the pp=2 run's train.log"))
def pp_plan_psi(plan_out, train_log):
    planned = int(re.search(r"stage 0: blocks 0-\d+, Ψ = (\d+)", plan_out).group(1))
    held = run_psi(train_log, "pipeline stage 0 of 2: Ψ = its blocks")
    print(f"  plan: stage 0 Ψ {planned}; the run's rank 0: {held}", file=sys.stderr)
    assert planned == held, (planned, held)


@check("dropout-follows", "tp=2 with dropout draws other numbers than 1 rank with dropout, and its losses stay "
       "within 2% of them", ("one", "metrics.jsonl of 1 rank with dropout"), ("tp", "metrics.jsonl of tp=2 with dropout"),
       ("plain", "metrics.jsonl of 1 rank without dropout (printed for scale)"))
def dropout_follows(one, tp, plain):
    def losses(path):
        return [r["loss"] for r in map(json.loads, open(path)) if r.get("type") == "train"]
    one, tp, plain = losses(one), losses(tp), losses(plain)
    apart = max(abs(a - b) / b for a, b in zip(tp, one))
    print(f"  tp=2 with dropout vs 1 rank with dropout: largest relative difference {apart:.3g}; "
          f"1 rank without dropout differs by {max(abs(a - b) / b for a, b in zip(plain, one)):.3g}", file=sys.stderr)
    assert tp != one, "the same numbers as one rank: the test would prove nothing"
    assert apart < 0.02, apart


@check("same-eval", "the evaluations (steps 4 and 8) of two runs agree within 1e-5 relative",
       ("a", "metrics.jsonl of run A"), ("b", "metrics.jsonl of run B"))
def same_eval(a, b):
    def evals(path):
        return {r["step"]: r["eval_loss"] for r in map(json.loads, open(path)) if "eval_loss" in r}
    a, b = evals(a), evals(b)
    assert a.keys() == b.keys() and len(a) == 2, (a, b)
    worst = max(abs(a[s] - b[s]) / a[s] for s in a)
    print(f"  eval losses: largest relative difference {worst:.3g}", file=sys.stderr)
    assert worst <= 1e-5, (a, b)


# --- divergence_test.sh (torch and safetensors)

@check("finite", "every tensor of a model is finite", ("model", "model.safetensors"))
def finite(model):
    import torch
    from safetensors.torch import load_file
    bad = [k for k, v in load_file(model).items() if not torch.isfinite(v).all()]
    assert not bad, bad


@check("equal-weights", "two models are equal bit for bit, tensor by tensor",
       ("a", "model.safetensors of run A"), ("b", "model.safetensors of run B"))
def equal_weights(a, b):
    import torch
    from safetensors.torch import load_file
    a, b = load_file(a), load_file(b)
    assert a.keys() == b.keys()
    bad = [k for k in a if not torch.equal(a[k], b[k])]
    assert not bad, bad


@check("metric", "prints KEY of STEP's first record that has it (nothing if none)",
       ("metrics", "metrics.jsonl"), ("step", "the step"), ("key", "the field"))
def metric(metrics, step, key):
    for line in open(metrics):
        r = json.loads(line)
        if r.get("step") == int(step) and key in r:
            print(r[key])
            break


# --- mlflow_test.sh (mlflow's client)

@check("mlflow-run", "the MLflow run of a run directory, read with mlflow's client: status, params, tags, every "
       "step's train/loss as metrics.jsonl has it, the evaluations; prints the run id",
       ("uri", "tracking server"), ("run_dir", "run directory"), ("status", "FINISHED, FAILED, ..."),
       ("last", "the last step"))
def mlflow_run(uri, run_dir, status, last):
    from mlflow.tracking import MlflowClient
    last = int(last)
    run_id = json.load(open(f"{run_dir}/mlflow.json"))["run_id"]
    c = MlflowClient(uri)
    run = c.get_run(run_id)
    assert run.info.status == status, f"status {run.info.status}, expected {status}"
    p, t = run.data.params, run.data.tags
    assert p["optimizer.lr"] == "0.003", p.get("optimizer.lr")
    assert p["model.arch"] == "gpt2" and p["trainer.max_steps"] == "12" and p["logging.mlflow.experiment"] == "e2e"
    assert t["team"] == "nlp", t
    assert t["hftrain.run_dir"] == run_dir, t["hftrain.run_dir"]
    assert c.get_experiment(run.info.experiment_id).name == "e2e"
    if status == "FINISHED":
        assert t["hftrain.final_model"] == f"{run_dir}/final", t.get("hftrain.final_model")
        assert t["hftrain.last_checkpoint"] == f"{run_dir}/checkpoint-{last}", t.get("hftrain.last_checkpoint")
    # Every step once, the value metrics.jsonl holds.
    want = {}
    for line in open(f"{run_dir}/metrics.jsonl"):
        r = json.loads(line)
        if "loss" in r and "eval_loss" not in r:
            want[r["step"]] = r["loss"]
    hist = c.get_metric_history(run_id, "train/loss")
    steps = sorted(m.step for m in hist)
    assert steps == list(range(1, last + 1)), steps
    for m in hist:
        assert math.isclose(m.value, want[m.step], rel_tol=1e-6), (m.step, m.value, want[m.step])
    evals = sorted(m.step for m in c.get_metric_history(run_id, "eval/loss"))
    assert evals == list(range(4, last + 1, 4)), evals
    assert c.get_metric_history(run_id, "train/lr") and c.get_metric_history(run_id, "train/tokens_per_s")
    print(run_id)


@check("mlflow-failed", "the MLflow run of a diverged run: FAILED, with step 5 in its hftrain.error tag",
       ("uri", "tracking server"), ("run_dir", "run directory"))
def mlflow_failed(uri, run_dir):
    from mlflow.tracking import MlflowClient
    run = MlflowClient(uri).get_run(json.load(open(f"{run_dir}/mlflow.json"))["run_id"])
    assert run.info.status == "FAILED", run.info.status
    assert "step 5" in run.data.tags["hftrain.error"], run.data.tags.get("hftrain.error")


# --- sweep_test.sh

@check("sweep-statuses", "prints 'point=status' for every line of a sweep.jsonl", ("sweep_jsonl", "sweep.jsonl"))
def sweep_statuses(sweep_jsonl):
    print(" ".join(f'{r["point"]}={r["status"]}' for r in map(json.loads, open(sweep_jsonl))))


@check("sweep-figures", "the grid's sweep.jsonl: the failed point's exit code and cause, the finished points' "
       "figures, and the resumed point's history (each step once)", ("sweep_jsonl", "sweep.jsonl"))
def sweep_figures(sweep_jsonl):
    rows = {r["point"]: r for r in map(json.loads, open(sweep_jsonl))}
    for r in rows.values():
        if r["status"] != "finished":
            assert r["exit_code"] == 2 and "divisible" in r["cause"], r
            continue
        assert r["step"] == 8 and r["total_steps"] == 8, r
        assert r["final_eval_loss"] > 0 and r["best_eval_loss"] <= r["final_eval_loss"], r
        assert r["tokens_per_s"] > 0 and r["duration_s"] > 0, r
        assert r["overrides"][0].startswith("model.n_head="), r
    # The resumed point's history: each step once, as an uninterrupted run writes it.
    steps = [json.loads(line)["step"] for line in open(rows["n_head=2,d_model=48"]["run_dir"] + "/metrics.jsonl")
             if '"loss"' in line and "eval_loss" not in line]
    assert steps == list(range(1, 9)), steps


@check("runs-json", "`hftrain runs --json` of the table folder: busy, diverged, done and stopped, as they are",
       ("stdout", "the file holding its stdout"))
def runs_json(stdout):
    rows = {r["run"]: r for r in map(json.loads, open(stdout))}
    assert set(rows) == {"busy", "diverged", "done", "stopped"}, rows.keys()
    assert rows["done"]["status"] == "finished" and rows["done"]["best_eval_loss"] > 0 and rows["done"]["duration_s"] > 0
    assert rows["diverged"]["status"] == "failed" and "step 3" in rows["diverged"]["cause"]
    assert rows["stopped"]["newest_checkpoint"].endswith("checkpoint-" + str(rows["stopped"]["step"]))


# --- gpu_test.sh

@check("gpu-metrics", "every step record of a GPU run has the fields (MFU and peak memory as numbers; loss scale "
       "and skipped steps under fp16), and the loss fell", ("metrics", "metrics.jsonl"),
       ("precision", "fp32, bf16 or fp16"))
def gpu_metrics(metrics, precision):
    recs = [r for r in map(json.loads, open(metrics)) if r["type"] == "train"]
    assert recs, "no step records"
    for r in recs:
        for k in ("step", "epoch", "loss", "lr", "grad_norm", "tokens_seen", "tokens_per_s", "step_time_ms",
                  "data_wait_ms", "peak_mem_mb", "mfu"):
            assert k in r, f"step {r['step']}: no {k}"
        assert r["peak_mem_mb"] and r["peak_mem_mb"] > 0, f"peak_mem_mb {r['peak_mem_mb']}"
        assert r["mfu"] is not None and 0 < r["mfu"] < 1, f"mfu {r['mfu']}"
        if precision == "fp16":
            # metrics.jsonl writes the scale as a JSON number (65536.0): a power of two, as a float.
            assert r["loss_scale"] >= 1 and math.log2(r["loss_scale"]).is_integer(), r["loss_scale"]
            assert r["skipped_steps"] >= 0
        else:
            assert "loss_scale" not in r
    last = recs[-1]
    print(f"  {precision}: loss {recs[0]['loss']:.3f} -> {last['loss']:.3f}, mfu {last['mfu']:.4f}, "
          f"peak {last['peak_mem_mb']:.0f} MiB, {last['tokens_per_s']:.0f} tokens/s, data wait {last['data_wait_ms']:.2f} ms"
          + (f", loss scale {last['loss_scale']}, skipped {sum(r['skipped_steps'] for r in recs)}"
             if precision == "fp16" else ""),
          file=sys.stderr)
    assert last["loss"] < recs[0]["loss"], "the loss did not fall"


@check("fp16-overflow", "a scale no fp16 gradient survives: each of 4 steps skipped, and the scale backed off",
       ("metrics", "metrics.jsonl"))
def fp16_overflow(metrics):
    recs = [r for r in map(json.loads, open(metrics)) if r["type"] == "train"]
    assert [r["skipped_steps"] for r in recs] == [1, 1, 1, 1], recs
    assert recs[-1]["loss_scale"] < 1e30, recs[-1]["loss_scale"]


@check("seeds-differ", "two runs' training losses differ (another seed gave another dropout)",
       ("a", "metrics.jsonl of run A"), ("b", "metrics.jsonl of run B"))
def seeds_differ(a, b):
    a, b = ([r["loss"] for r in map(json.loads, open(p)) if r["type"] == "train"] for p in (a, b))
    assert a != b


# --- cli_test.sh and generate_test.sh

@check("config-json", "`hftrain config --json --provenance` on stdin: run.name's value is NAME",
       ("name", "the expected run name"))
def config_json(name):
    d = json.load(sys.stdin)
    assert d["run"]["name"]["value"] == name


@check("bpe-tokenizer", "a tokenizer.json of a BPE model", ("path", "tokenizer.json"))
def bpe_tokenizer(path):
    d = json.load(open(path))
    assert d["model"]["type"] == "BPE"


# --- the self-test

def write_f32_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, values in tensors.items():
        blob = array.array("f", values).tobytes()
        header[name] = {"dtype": "F32", "shape": [len(values)], "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def write_jsonl(path, rows):
    with open(path, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


def self_test():
    """Each check on made-up files: once where it must hold, once (or more) where it must not."""
    results = []

    def expect(holds, name, *args, stdin=None):
        function = CHECKS[name][0]
        saved = sys.stdin, sys.stdout, sys.stderr
        sink = open(os.devnull, "w")
        try:
            if stdin is not None:
                sys.stdin = open(stdin)
            sys.stdout = sys.stderr = sink
            function(*args)
            held = True
        except AssertionError:
            held = False
        finally:
            if sys.stdin is not saved[0]:
                sys.stdin.close()
            sys.stdin, sys.stdout, sys.stderr = saved
            sink.close()
        results.append((name, holds, held))

    with tempfile.TemporaryDirectory() as tmp:
        def p(*parts):
            path = os.path.join(tmp, *parts)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            return path

        def train(step, loss, **extra):
            return {"type": "train", "step": step, "loss": loss, "lr": 0.001 * step, "grad_norm": 1.0 / step,
                    "tokens_seen": 64 * step, **extra}

        def evaluation(step, loss, **extra):
            return {"type": "eval", "step": step, "eval_loss": loss, **extra}

        base = [train(s, 5.0 - 0.3 * s) for s in range(1, 13)] + [evaluation(s, 4.0 - 0.1 * s) for s in (4, 8, 12)]
        write_jsonl(p("a", "metrics.jsonl"), base)
        write_jsonl(p("same", "metrics.jsonl"), base)
        nudged = [dict(r, loss=r["loss"] * (1 + 1e-4)) if r.get("step") == 7 and "loss" in r else r for r in base]
        write_jsonl(p("nudged", "metrics.jsonl"), nudged)
        write_jsonl(p("twice", "metrics.jsonl"), base + [train(3, 4.1)])
        A, SAME, NUDGED, TWICE = (p(d, "metrics.jsonl") for d in ("a", "same", "nudged", "twice"))
        expect(True, "close", A, SAME, "1", "12")
        expect(False, "close", A, NUDGED, "1", "12")
        expect(True, "close", A, NUDGED, "1", "12", "1e-3")
        expect(True, "close", A, NUDGED, "8", "12")
        expect(False, "close", A, SAME, "1", "13")
        expect(True, "same-history", A, SAME, "1", "12")
        expect(False, "same-history", A, NUDGED, "1", "12")
        expect(False, "same-history", A, SAME, "1", "11")
        expect(False, "same-history", A, TWICE, "1", "12")
        expect(True, "same-run", A, SAME)
        expect(False, "same-run", A, NUDGED)
        expect(True, "seeds-differ", A, NUDGED)
        expect(False, "seeds-differ", A, SAME)

        weights = {"w": [0.5, -1.25, 2.0], "b": [0.125]}
        write_f32_safetensors(p("w1.safetensors"), weights)
        write_f32_safetensors(p("w2.safetensors"), {"w": [0.5, -1.25, 2.0 + 1e-3], "b": [0.125]})
        expect(True, "same-weights", p("w1.safetensors"), p("w1.safetensors"), "0")
        expect(False, "same-weights", p("w1.safetensors"), p("w2.safetensors"))
        expect(True, "same-weights", p("w1.safetensors"), p("w2.safetensors"), "1e-3")
        try:
            import torch  # noqa: F401
            import safetensors.torch  # noqa: F401
        except ImportError:
            print("self-test: no torch/safetensors here; finite and equal-weights not exercised", file=sys.stderr)
        else:
            write_f32_safetensors(p("nan.safetensors"), {"w": [0.5, float("nan")]})
            expect(True, "finite", p("w1.safetensors"))
            expect(False, "finite", p("nan.safetensors"))
            expect(True, "equal-weights", p("w1.safetensors"), p("w1.safetensors"))
            expect(False, "equal-weights", p("w1.safetensors"), p("w2.safetensors"))

        # a short run: the loss fell by 20%
        fields = dict(epoch=0, step_time_ms=1.0, data_wait_ms=0.1, peak_mem_mb=10.0, tokens_per_s=100.0)
        write_jsonl(p("run", "metrics.jsonl"),
                    [train(s, 5.0 - 0.3 * s, **fields) for s in range(1, 13)] + [evaluation(6, 3.0, eval_ppl=20.0)])
        write_jsonl(p("flat", "metrics.jsonl"),
                    [train(s, 5.0, **fields) for s in range(1, 13)] + [evaluation(6, 3.0, eval_ppl=20.0)])
        expect(True, "run-metrics", p("run", "metrics.jsonl"))
        expect(False, "run-metrics", p("flat", "metrics.jsonl"))

        def mix(chat_tokens):
            return [train(1, 4.0, **{"data/cookies/tokens": 100, "data/cookies/epoch": 0.5,
                                     "data/mixchat/tokens": chat_tokens, "data/mixchat/epoch": 0.5}),
                    evaluation(1, 3.0, **{"eval/cookies/loss": 3.0, "eval/mixchat/loss": 3.0})]
        write_jsonl(p("mix", "metrics.jsonl"), mix(300))
        write_jsonl(p("mix-even", "metrics.jsonl"), mix(100))
        expect(True, "mixture-metrics", p("mix", "metrics.jsonl"))
        expect(False, "mixture-metrics", p("mix-even", "metrics.jsonl"))
        expect(True, "mixture-counts", p("mix", "metrics.jsonl"), p("mix", "metrics.jsonl"))
        expect(False, "mixture-counts", p("mix", "metrics.jsonl"), p("mix-even", "metrics.jsonl"))

        # two ranks' logs, one metrics writer
        line = ("memory on rank {r}: parameters 1000 B (x; formula 1000 B); gradients 500 B (x; formula {g} B); "
                "optimizer state 2000 B (x; formula 2000 B); buffers 16 B\n")
        for name, g in (("mem", 510), ("mem-off", 600)):
            for r, log in enumerate(("train.log", "train-rank1.log")):
                open(p(name, log), "w").write(line.format(r=r, g=g))
        expect(True, "memory-matches", p("mem"))
        expect(False, "memory-matches", p("mem-off"))
        expect(False, "memory-matches", p("mem"), "4")
        open(p("a", "events.out.tfevents.1"), "w").close()
        expect(True, "one-writer", p("a"))
        expect(False, "one-writer", p("twice"))

        ner = [evaluation(4, 2.0, eval_precision=0.5, eval_recall=0.25, eval_f1=1 / 3, eval_accuracy=0.75)]
        write_jsonl(p("ner1", "metrics.jsonl"), ner)
        write_jsonl(p("ner2", "metrics.jsonl"), [dict(ner[0], eval_f1=0.34)])
        expect(True, "entity-metrics", p("ner1"), p("ner1"))
        expect(False, "entity-metrics", p("ner1"), p("ner2"))

        # plan against the run
        open(p("tp.log"), "w").write("memory on rank 0 (ddp, 2 ranks; tensor parallel 2: Ψ = this rank's pieces "
                                     "...): Ψ = 1234, parameters ...\n")
        expect(True, "tp-plan-psi", "tensor parallel 2: Ψ per rank = 2000 split / 2 + 234 whole on every rank = 1234",
               p("tp.log"))
        expect(False, "tp-plan-psi", "tensor parallel 2: Ψ per rank = 2000 split / 2 + 235 whole on every rank = 1235",
               p("tp.log"))
        open(p("pp.log"), "w").write("memory on rank 0 (pipeline stage 0 of 2: Ψ = its blocks ...): Ψ = 777, ...\n")
        expect(True, "pp-plan-psi", "stage 0: blocks 0-1, Ψ = 777", p("pp.log"))
        expect(False, "pp-plan-psi", "stage 0: blocks 0-1, Ψ = 778", p("pp.log"))

        # dropout: other numbers, within 2%
        write_jsonl(p("drop-one.jsonl"), [train(s, 4.0) for s in range(1, 9)])
        write_jsonl(p("drop-tp.jsonl"), [train(s, 4.04) for s in range(1, 9)])
        write_jsonl(p("drop-far.jsonl"), [train(s, 4.2) for s in range(1, 9)])
        expect(True, "dropout-follows", p("drop-one.jsonl"), p("drop-tp.jsonl"), A)
        expect(False, "dropout-follows", p("drop-one.jsonl"), p("drop-one.jsonl"), A)
        expect(False, "dropout-follows", p("drop-one.jsonl"), p("drop-far.jsonl"), A)

        write_jsonl(p("ev1.jsonl"), [evaluation(4, 3.0), evaluation(8, 2.0)])
        write_jsonl(p("ev2.jsonl"), [evaluation(4, 3.0), evaluation(8, 2.001)])
        expect(True, "same-eval", p("ev1.jsonl"), p("ev1.jsonl"))
        expect(False, "same-eval", p("ev1.jsonl"), p("ev2.jsonl"))
        expect(False, "same-eval", A, A)  # three evaluations, not two

        # sweeps and the run table
        def point(name, status, run_dir, **extra):
            return {"point": name, "status": status, "run_dir": run_dir, **extra}
        finished = dict(step=8, total_steps=8, final_eval_loss=2.0, best_eval_loss=1.9, tokens_per_s=10.0,
                        duration_s=3.0, overrides=["model.n_head=2", "model.d_model=48"])
        write_jsonl(p("resumed", "metrics.jsonl"), [train(s, 4.0) for s in range(1, 9)] + [evaluation(4, 3.0)])
        grid = [point("n_head=2,d_model=48", "finished", p("resumed"), **finished),
                point("n_head=3,d_model=32", "failed", p("x"), exit_code=2, cause="`model.d_model` is not divisible")]
        write_jsonl(p("sweep.jsonl"), grid)
        write_jsonl(p("sweep-bad.jsonl"), [grid[0], dict(grid[1], exit_code=1)])
        expect(True, "sweep-figures", p("sweep.jsonl"))
        expect(False, "sweep-figures", p("sweep-bad.jsonl"))
        expect(True, "sweep-statuses", p("sweep.jsonl"))
        table = [{"run": "done", "status": "finished", "best_eval_loss": 2.0, "duration_s": 4.0},
                 {"run": "diverged", "status": "failed", "cause": "step 3: the loss is nan"},
                 {"run": "stopped", "status": "interrupted", "step": 2, "newest_checkpoint": "/x/checkpoint-2"},
                 {"run": "busy", "status": "running"}]
        write_jsonl(p("runs.jsonl"), table)
        write_jsonl(p("runs-bad.jsonl"), table[:3])
        expect(True, "runs-json", p("runs.jsonl"))
        expect(False, "runs-json", p("runs-bad.jsonl"))

        # GPU metrics
        gpu = dict(fields, mfu=0.1)
        write_jsonl(p("gpu.jsonl"), [train(s, 5.0 - 0.1 * s, **gpu) for s in range(1, 5)])
        write_jsonl(p("fp16.jsonl"), [train(s, 5.0 - 0.1 * s, loss_scale=65536.0, skipped_steps=0, **gpu)
                                      for s in range(1, 5)])
        write_jsonl(p("gpu-no-mfu.jsonl"), [train(s, 5.0 - 0.1 * s, **dict(gpu, mfu=None)) for s in range(1, 5)])
        expect(True, "gpu-metrics", p("gpu.jsonl"), "fp32")
        expect(True, "gpu-metrics", p("fp16.jsonl"), "fp16")
        expect(False, "gpu-metrics", p("fp16.jsonl"), "bf16")
        expect(False, "gpu-metrics", p("gpu-no-mfu.jsonl"), "fp32")
        write_jsonl(p("overflow.jsonl"), [train(s, 5.0, skipped_steps=1, loss_scale=2.0 ** (100 - s)) for s in range(1, 5)])
        write_jsonl(p("no-overflow.jsonl"), [train(s, 5.0, skipped_steps=int(s > 1), loss_scale=1.0) for s in range(1, 5)])
        expect(True, "fp16-overflow", p("overflow.jsonl"))
        expect(False, "fp16-overflow", p("no-overflow.jsonl"))

        # the loss falls; two runs' losses at a step; an evaluate verb's figure against a run's
        write_jsonl(p("falls.jsonl"), [train(s, 5.0 - 0.5 * s) for s in range(1, 5)])
        write_jsonl(p("flat.jsonl"), [train(s, 5.0) for s in range(1, 5)])
        expect(True, "loss-falls", p("falls.jsonl"))
        expect(False, "loss-falls", p("flat.jsonl"))
        expect(True, "losses-differ", p("falls.jsonl"), p("flat.jsonl"), "2")
        expect(False, "losses-differ", p("flat.jsonl"), p("flat.jsonl"), "2")
        write_jsonl(p("evals.jsonl"), [train(1, 5.0), {"type": "eval", "step": 1, "eval_loss": 4.25}])
        json.dump({"eval_loss": 4.25}, open(p("eval-same.json"), "w"))
        json.dump({"eval_loss": 4.5}, open(p("eval-other.json"), "w"))
        expect(True, "last-eval-equals", p("evals.jsonl"), p("eval-same.json"))
        expect(False, "last-eval-equals", p("evals.jsonl"), p("eval-other.json"))

        json.dump({"run": {"name": {"value": "quickstart"}}}, open(p("config.json"), "w"))
        expect(True, "config-json", "quickstart", stdin=p("config.json"))
        expect(False, "config-json", "other", stdin=p("config.json"))
        json.dump({"model": {"type": "BPE"}}, open(p("bpe.json"), "w"))
        json.dump({"model": {"type": "WordPiece"}}, open(p("wp.json"), "w"))
        expect(True, "bpe-tokenizer", p("bpe.json"))
        expect(False, "bpe-tokenizer", p("wp.json"))

    wrong = [(name, holds) for name, holds, held in results if holds != held]
    for name, holds in wrong:
        print(f"self-test: {name} {'failed on input it must pass' if holds else 'passed input it must fail'}")
    untested = sorted(set(CHECKS) - {name for name, _, _ in results} - {"mlflow-run", "mlflow-failed", "metric",
                                                                           "best-eval-step", "eval-steps", "finite",
                                                                           "equal-weights"})
    for name in untested:
        print(f"self-test: {name} has no case here")
    # The scripts name only checks that exist.
    here = os.path.dirname(os.path.abspath(__file__))
    unknown = []
    for script in sorted(glob.glob(os.path.join(here, "*.sh"))):
        for number, text in enumerate(open(script), start=1):
            for name in re.findall(r"\bcheck_py ([a-z][a-z0-9-]*)", text):
                if name not in CHECKS:
                    unknown.append(f"{os.path.basename(script)}:{number}: check_py {name}: no such check")
    for line in unknown:
        print(f"self-test: {line}")
    # Every script parses.
    broken = []
    bash = shutil.which("bash")
    for script in sorted(glob.glob(os.path.join(here, "*.sh"))) if bash else []:
        parsed = subprocess.run([bash, "-n", script], capture_output=True, text=True)
        if parsed.returncode != 0:
            broken.append(script)
            print(f"self-test: bash -n {os.path.basename(script)}: {parsed.stderr.strip()}")
    print(f"self-test: {len(results)} cases of {len(CHECKS)} checks, {len(wrong)} wrong; "
          f"{len(untested)} checks without a case; {len(unknown)} unknown names in the scripts; "
          f"{len(broken)} scripts that do not parse")
    return 1 if wrong or untested or unknown or broken else 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="checks.py", description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[1:]))
    parser.add_argument("--self-test", action="store_true", help="run the checks on made-up files")
    sub = parser.add_subparsers(dest="check", metavar="NAME")
    parsers = [parser]
    for name, (_, help, arguments) in CHECKS.items():
        help = help.replace("%", "%%")  # argparse formats help with %
        parsers.append(sub.add_parser(name, help=help, description=help))
        for argument, argument_help, nargs in arguments:
            parsers[-1].add_argument(argument, help=argument_help.replace("%", "%%"), nargs=nargs)
    args = parser.parse_args(argv)
    if args.self_test:
        for one in parsers:  # --help of the module and of each check
            one.format_help()
        return self_test()
    if not args.check:
        parser.error("name a check (or --self-test)")
    function, _, arguments = CHECKS[args.check]
    values = [getattr(args, a) for a, _, _ in arguments]
    function(*[v for v in values if v is not None])
    return 0


if __name__ == "__main__":
    sys.exit(main())
