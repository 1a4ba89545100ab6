"""What the encoder conformance tests (hf_modernbert.py, hf_deberta.py) share: transformers' outputs
and gradients against hftrain_bert_forward's, export round trips, refusals, and five training steps
of the classify-bert recipe against transformers with torch's AdamW (plus activation checkpointing,
ZeRO-3 on 2 ranks and bf16 against the plain run, and `hftrain plan`'s parameter count)."""
import csv
import json
import os
import subprocess
import sys
import tempfile

import torch
from safetensors.torch import load_file

from hf_bert import ours  # noqa: E402 (the BERT conformance test's runner)
from hf_decoders import check, failures

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def forward_args(model, batch):
    """The inputs transformers' model takes: token types only where it has them."""
    args = {k: batch[k] for k in ("input_ids", "attention_mask")}
    if getattr(model.config, "type_vocab_size", 0) > 0:
        args["token_type_ids"] = batch["token_type_ids"]
    return args


def reference(model, batch):
    """transformers' outputs, loss and gradients by parameter name (eval mode)."""
    model.eval()
    model.zero_grad()
    base = getattr(model, "model", None) or getattr(model, "deberta", None) or model
    args = forward_args(model, batch)
    out = {"last_hidden_state": base(**args).last_hidden_state}
    if base is model:  # the bare encoder
        real = batch["attention_mask"].unsqueeze(-1).float()  # over the tokens, as hftrain_bert_forward
        loss = (out["last_hidden_state"].square() * real).sum() / (real.sum() * out["last_hidden_state"].size(-1))
    else:
        result = model(**args, labels=batch["labels"])
        out["logits"], loss = result.logits, result.loss
    loss.backward()
    grads = {name: p.grad.detach().clone() for name, p in model.named_parameters() if p.grad is not None}
    return {k: v.detach() for k, v in out.items()}, loss.detach(), grads


def compare(name, forward_bin, model_dir, work, model, batch, *extra):
    """hftrain's outputs, loss and gradients against transformers' (1e-5; gradients 1e-4 of each
    tensor's largest value)."""
    got, stdout = ours(forward_bin, model_dir, work, name, batch, *extra)
    want, loss, grads = reference(model, batch)
    report = []
    real = batch["attention_mask"].bool()
    for key, ref in want.items():
        mine = got[key]
        if key == "last_hidden_state" or (key == "logits" and ref.dim() == 3):
            # Padded positions hold what no output reads (hftrain's ModernBERT leaves zeros there, as
            # transformers' unpadded path; transformers' SDPA path computes them): compared where
            # there are tokens.
            mine, ref = mine[real], ref[real]
        diff = (mine - ref).abs().max().item()
        check(diff <= 1e-5, f"{name}: {key} differs by {diff}")
        report.append(f"{key} {diff:.1e} (scale {ref.abs().max().item():.2f})")
    loss_diff = abs(got["loss"].item() - loss.item())
    check(loss_diff <= 1e-5, f"{name}: loss {got['loss'].item()} vs transformers' {loss.item()}")
    ours_g = {k[len("grad."):]: v for k, v in got.items() if k.startswith("grad.")}
    check(set(ours_g) == set(grads), f"{name}: gradient names differ: only ours {sorted(set(ours_g) - set(grads))}, "
                                     f"only transformers' {sorted(set(grads) - set(ours_g))}")
    worst = 0.0
    largest = max(g.abs().max().item() for g in grads.values())
    for key in sorted(set(ours_g) & set(grads)):
        noise = max(ours_g[key].abs().max().item(), grads[key].abs().max().item()) / largest
        if noise <= 1e-6:
            # Zero in exact arithmetic (a key bias adds a constant to a query's whole row of scores,
            # which softmax ignores; DeBERTa's position-key biases and their LayerNorm likewise):
            # both sides hold rounding noise.
            continue
        rel = (ours_g[key] - grads[key]).abs().max().item() / max(grads[key].abs().max().item(), 1e-12)
        worst = max(worst, rel)
        check(rel <= 1e-4, f"{name}: gradient of {key} differs by {rel:.2e} of its largest value")
    print(f"{name}: {', '.join(report)}; loss diff {loss_diff:.1e}; {len(grads)} gradients, worst {worst:.1e}")
    return got, stdout


def round_trip(name, forward_bin, model_dir, work, batch, cls):
    """hftrain's export of a loaded model, and of one it initialised, loads in transformers as `cls`."""
    born_dir = os.path.join(work, name + "-born")
    os.makedirs(born_dir)
    with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
        config = json.load(f)
    with open(os.path.join(born_dir, "config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f)
    for label, source in (("loaded", model_dir), ("hftrain-initialised", born_dir)):
        export = os.path.join(work, f"{name}-{label}-export")
        got, _ = ours(forward_bin, source, work, f"{name}-{label}", batch, "--export", export)
        model = cls.from_pretrained(export, dtype=torch.float32).eval()
        check(type(model) is cls, f"{name}: the {label} export loads as {type(model).__name__}")
        logits = model(**forward_args(model, batch)).logits.detach()
        mine = got["logits"]
        if logits.dim() == 3:  # a token classifier's: where there are tokens
            real = batch["attention_mask"].bool()
            logits, mine = logits[real], mine[real]
        diff = (logits - mine).abs().max().item()
        check(diff <= 1e-5, f"{name}: the {label} export's logits differ from hftrain's by {diff}")
        check(logits.abs().max().item() > 0.05, f"{name}: the {label} export's logits are too small to compare")
        print(f"{name}: {label} model exported, transformers' logits vs hftrain's {diff:.1e}")


def refusals(forward_bin, work, config, cases):
    """Each of `cases` (name -> (config.json changes, the field the message must name)) refused with
    exit 2."""
    for name, (changes, needle) in cases.items():
        model_dir = os.path.join(work, name)
        os.makedirs(model_dir)
        with open(os.path.join(model_dir, "config.json"), "w", encoding="utf-8") as f:
            json.dump(dict(config, **changes), f)
        p = subprocess.run([forward_bin, model_dir, "x", "y"], capture_output=True, text=True)
        check(p.returncode == 2 and needle in p.stderr,
              f"{name}: expected a refusal naming {needle}, got exit {p.returncode}: {p.stderr.strip()}")
        print(f"{name}: refused: {p.stderr.strip().splitlines()[0] if p.stderr.strip() else ''}")


def reviews(work, n=48):
    """The first `n` shipped reviews, as a CSV of text and label, and their rows."""
    with open(os.path.join(ROOT, "recipes/data/reviews_example.csv"), newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))[:n]
    data = os.path.join(work, "reviews.csv")
    with open(data, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=["text", "label"])
        writer.writeheader()
        writer.writerows({"text": r["text"], "label": r["label"]} for r in rows)
    return data, rows


def training(hftrain, work, name, pretrained, model, tok, data, rows, names):
    """5 AdamW steps of classify-bert on `pretrained` (a *ForSequenceClassification directory holding
    `model` and tok's tokenizer.json; one full batch per step) against transformers trained the same
    way: losses and final weights within 1e-4; activation checkpointing and ZeRO-3 on 2 ranks within
    1e-5 of the plain run, bf16 within 2e-2; `hftrain plan` counts transformers' parameters."""
    env = dict(os.environ, HFTRAIN_RECIPES_DIR=os.path.join(ROOT, "recipes"), HFTRAIN_CACHE_DIR=os.path.join(work, "cache"))
    common = [f"model.from={pretrained}", f"data.train={data}", "data.validation_fraction=0", "trainer.eval_every=0",
              "data.shuffle=false", "trainer.max_steps=5", "trainer.max_epochs=null", "scheduler.name=constant",
              "scheduler.warmup_steps=0", "optimizer.name=adamw", "optimizer.lr=1e-3", "optimizer.weight_decay=0",
              "trainer.max_grad_norm=.inf", "trainer.log_every=1", "trainer.device=cpu", "checkpoint.every_steps=0"]

    def hf_run(run_name, *extra, nproc=1, micro=len(rows)):
        out = os.path.join(work, run_name)
        args = [hftrain, "run", "classify-bert", *common, f"trainer.micro_batch_size={micro}", f"run.output_dir={out}",
                *extra] + (["--nproc-per-node", str(nproc)] if nproc > 1 else [])
        p = subprocess.run(args, capture_output=True, text=True, env=env)
        check(p.returncode == 0, f"{run_name}: hftrain exited {p.returncode}: {p.stderr[-1500:]}")
        with open(os.path.join(out, "metrics.jsonl"), encoding="utf-8") as f:
            return out, {r["step"]: r["loss"] for r in map(json.loads, f) if "loss" in r and "eval_loss" not in r}

    plan = subprocess.run([hftrain, "plan", "classify-bert", f"model.from={pretrained}", "--nproc", "1"],
                          capture_output=True, text=True, env=env).stdout
    count = sum(p.numel() for p in model.parameters())
    check(f"Ψ = {count} parameters" in plan, f"{name} plan: expected {count} parameters: {plan[:300]}")
    print(f"{name} plan: {count} parameters, as transformers counts them")
    out, losses = hf_run(f"train-{name}")
    # transformers: the same batch (the tokenizers library's ids, padded), the same optimizer.
    encoded = [tok.encode(r["text"]) for r in rows]
    T = max(len(e.ids) for e in encoded)
    check(T <= 64, f"{name} training: a review of {T} tokens would be truncated by the recipe's data.seq_len")
    pad = model.config.pad_token_id or 0
    ids = torch.tensor([e.ids + [pad] * (T - len(e.ids)) for e in encoded])
    types = torch.tensor([e.type_ids + [0] * (T - len(e.ids)) for e in encoded])
    mask = torch.tensor([[1] * len(e.ids) + [0] * (T - len(e.ids)) for e in encoded])
    labels = torch.tensor([names.index(r["label"]) for r in rows])
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.0)
    ref = []
    for _ in range(5):
        loss = model(**forward_args(model, {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}),
                     labels=labels).loss
        ref.append(loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    worst = max(abs(losses.get(s + 1, float("nan")) - ref[s]) / ref[s] for s in range(5))
    check(worst <= 1e-4, f"{name} training: hftrain's losses {losses} vs transformers' {ref}")
    final = load_file(os.path.join(out, "final", "model.safetensors"))
    # BERT's attention key bias has a zero gradient in exact arithmetic (softmax ignores a constant
    # per query): Adam turns each side's rounding noise into its own updates, so it is left out.
    weights = max((final[n] - p.detach()).abs().max().item() / max(p.abs().max().item(), 1e-12)
                  for n, p in model.named_parameters() if not n.endswith("attention.self.key.bias"))
    check(weights <= 1e-4, f"{name} training: final weights differ from transformers' by {weights:.2e} relative")
    print(f"{name} training: 5 AdamW steps, losses {', '.join(f'{x:.6f}' for x in ref)} (transformers); largest "
          f"relative difference {worst:.1e}; final weights {weights:.1e}")
    for run_name, extra, nproc, micro, tol in (
            ("checkpointing", ["model.activation_checkpointing=true"], 1, len(rows), 1e-5),
            ("zero3-2-ranks", ["distributed.strategy=zero3"], 2, len(rows) // 2, 1e-5),
            ("bf16", ["trainer.precision=bf16"], 1, len(rows), 2e-2)):
        _, other = hf_run(f"train-{name}-{run_name}", *extra, nproc=nproc, micro=micro)
        diff = max(abs(other.get(s, float("nan")) - losses[s]) / losses[s] for s in losses)
        check(diff <= tol, f"{name} training, {run_name}: losses {other} vs {losses}")
        print(f"{name} training, {run_name}: losses within {diff:.1e} of the plain fp32 run")


def main(what, conformance, training):
    """`conformance(forward_bin, work)` then `training(hftrain, work)` in a temporary folder; exit 1 on
    any failure. argv: hftrain_bert_forward, hftrain."""
    forward_bin, hftrain = sys.argv[1], sys.argv[2]
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="hftrain-encoder-") as work:
        conformance(forward_bin, work)
        training(hftrain, work)
    print(f"{len(failures)} failures" if failures else
          f"ok: hftrain's {what} equals transformers' outputs, gradients and training, and its exports load there",
          file=sys.stderr if failures else sys.stdout)
    return 1 if failures else 0
