"""hftrain's BERT and RoBERTa encoders against transformers, on tiny random models it makes itself.

BertForSequenceClassification and BertModel with odd sizes (hidden 24, 3 heads, 2 layers,
intermediate 37, 3 labels), every parameter perturbed (biases off zero, LayerNorms off one), a batch
with padding and token types: save_pretrained -> hftrain loads the directory -> logits and loss
equal transformers' within 1e-5 (fp32, eval mode) and every parameter's gradient after one backward
pass within 1e-4 of its largest value (the attention key biases' gradients, zero in exact
arithmetic, are checked to be rounding noise on both sides); likewise the last hidden state and pooled output. Also:
gelu_new and relu activations, no padding token, eager attention, a sharded directory, an fp16
directory (converted to fp32 in the copy), a BertModel directory loaded into a classifier (the
classifier freshly initialised and reported, the encoder's outputs equal) and a BertForMaskedLM
directory (its heads dropped and reported). Refusals: relative positions, a decoder, regression.
RoBERTa: RobertaForSequenceClassification (positions counted from the padding id over the tokens
that are not padding, no pooler, the dense + tanh + out_proj head) and RobertaModel, the same checks
and export; a RobertaForMaskedLM directory fine-tuned into a classifier (lm_head dropped, the head
new). Token classifiers: BertForTokenClassification and RobertaForTokenClassification (no pooler,
the classifier on every token; labels per token, -100 on padding and on some tokens), the same
checks and export.

Round trips: the directory hftrain writes for a loaded model, and for a model hftrain initialised
itself, load with BertForSequenceClassification.from_pretrained (id2label kept) and give the same
logits as hftrain.

    .venv/bin/python tests/conformance/hf_bert.py path/to/hftrain_bert_forward
"""
import json
import os
import subprocess
import sys
import tempfile

import torch
from safetensors.torch import load_file, save_file
from transformers import (BertConfig, BertForMaskedLM, BertForSequenceClassification, BertForTokenClassification,
                          BertModel, RobertaConfig, RobertaForMaskedLM, RobertaForSequenceClassification,
                          RobertaForTokenClassification, RobertaModel, XLMRobertaConfig,
                          XLMRobertaForSequenceClassification, XLMRobertaForTokenClassification)
from transformers.utils import logging as hf_logging

hf_logging.set_verbosity_error()  # quiet: hf_decoders' configs at import, from_pretrained's "newly initialized"
from hf_decoders import check, failures, perturb  # noqa: E402 (the decoder conformance test's helpers)


BASE = dict(vocab_size=53, hidden_size=24, num_hidden_layers=2, num_attention_heads=3, intermediate_size=37,
            max_position_embeddings=20, type_vocab_size=2, initializer_range=0.2, layer_norm_eps=1e-12,
            hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1, num_labels=3,
            id2label={0: "negative", 1: "neutral", 2: "positive"},
            label2id={"negative": 0, "neutral": 1, "positive": 2})

# name -> (model class, config changes, attention implementation)
CASES = {
    "classifier": (BertForSequenceClassification, {}, "sdpa"),
    "classifier-eager": (BertForSequenceClassification, {}, "eager"),
    "classifier-gelu_new-no-pad": (BertForSequenceClassification, {"hidden_act": "gelu_new", "pad_token_id": None,
                                                                    "classifier_dropout": 0.3}, "sdpa"),
    "classifier-relu-3-types": (BertForSequenceClassification, {"hidden_act": "relu", "type_vocab_size": 3}, "sdpa"),
    "bert-model": (BertModel, {}, "sdpa"),
    # RoBERTa: padding id 1 (positions 2, 3, ... over the tokens; the table's first two rows are
    # padding's and unused), one token type, its own head.
    "roberta-classifier": (RobertaForSequenceClassification, {}, "sdpa"),
    "roberta-classifier-eager-dropout": (RobertaForSequenceClassification, {"classifier_dropout": 0.2}, "eager"),
    "roberta-model": (RobertaModel, {}, "sdpa"),
    "token-classifier": (BertForTokenClassification, {"classifier_dropout": 0.2}, "sdpa"),
    "roberta-token-classifier": (RobertaForTokenClassification, {}, "sdpa"),
    # XLM-RoBERTa: RoBERTa's model under its own class names (xlm-roberta-base's family).
    "xlm-roberta-token-classifier": (XLMRobertaForTokenClassification, {}, "sdpa"),
    "xlm-roberta-classifier": (XLMRobertaForSequenceClassification, {}, "sdpa"),
}

ROBERTA = dict(pad_token_id=1, bos_token_id=0, eos_token_id=2, type_vocab_size=1, layer_norm_eps=1e-5)


def make_config(cls, changes):
    if cls.__name__.startswith("XLMRoberta"):
        return XLMRobertaConfig(**dict(BASE, **ROBERTA, **changes))
    if cls.__name__.startswith("Roberta"):
        return RobertaConfig(**dict(BASE, **ROBERTA, **changes))
    return BertConfig(**dict(BASE, **changes))

REFUSED = {
    "relative-positions": ({"position_embedding_type": "relative_key"}, "position_embedding_type"),
    "decoder": ({"is_decoder": True}, "is_decoder"),
    "regression": ({"problem_type": "regression"}, "problem_type"),
}


def run(*args):
    p = subprocess.run([str(a) for a in args], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{args[0]} failed ({p.returncode}): {p.stderr.strip()}")
    return p.stdout


def inputs(config, seed, token_labels=False):
    """A batch of 3 with padding (lengths 11, 7, 4), [CLS]-like first ids and two segments."""
    g = torch.Generator().manual_seed(seed)
    lengths = [11, 7, 4]
    T = max(lengths)
    # Tokens never the padding id (RoBERTa numbers positions by it; BERT's pad is 0).
    ids = torch.randint(config.pad_token_id + 1 if config.pad_token_id else 1, config.vocab_size, (3, T), generator=g)
    mask = torch.zeros(3, T, dtype=torch.int64)
    types = torch.zeros(3, T, dtype=torch.int64)
    for i, n in enumerate(lengths):
        mask[i, :n] = 1
        types[i, n // 2:n] = max(getattr(config, "type_vocab_size", 1), 1) - 1  # ModernBERT and DeBERTa-v3 have none
        ids[i, n:] = config.pad_token_id if config.pad_token_id is not None else 0
    labels = torch.tensor([2, 0, 1])
    if token_labels:  # a tag per token; -100 on padding and on every third token (a word's later pieces)
        labels = torch.randint(0, config.num_labels, (3, T), generator=g)
        labels[mask == 0] = -100
        labels[:, 2::3] = -100
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types, "labels": labels}


def reference(model, batch):
    """transformers' outputs, loss and gradients (by parameter name), in eval mode."""
    model.eval()
    model.zero_grad()
    base = getattr(model, "bert", None) or getattr(model, "roberta", None) or model  # XLM-R: "roberta" too
    args = {k: batch[k] for k in ("input_ids", "attention_mask", "token_type_ids")}
    enc = base(**args)
    out = {"last_hidden_state": enc.last_hidden_state}
    if enc.pooler_output is not None:  # RobertaForSequenceClassification has no pooler
        out["pooled"] = enc.pooler_output
    if type(model).__name__.endswith(("ForSequenceClassification", "ForTokenClassification")):
        result = model(**args, labels=batch["labels"])
        out["logits"], loss = result.logits, result.loss
    else:
        real = batch["attention_mask"].unsqueeze(-1).float()  # over the tokens, as hftrain_bert_forward
        loss = (enc.last_hidden_state.square() * real).sum() / (real.sum() * enc.last_hidden_state.size(-1)) \
            + enc.pooler_output.mean()
    loss.backward()
    grads = {name: p.grad.detach().clone() for name, p in model.named_parameters() if p.grad is not None}
    return {k: v.detach() for k, v in out.items()}, loss.detach(), grads


def ours(forward_bin, model_dir, work, name, batch, *extra):
    in_file = os.path.join(work, name + "-in.safetensors")
    out_file = os.path.join(work, name + "-out.safetensors")
    save_file({k: v.contiguous() for k, v in batch.items()}, in_file)
    stdout = run(forward_bin, model_dir, in_file, out_file, *extra)
    return load_file(out_file), stdout


def compare(name, forward_bin, model_dir, work, model, batch, check_grads=True):
    got, stdout = ours(forward_bin, model_dir, work, name, batch)
    want, loss, grads = reference(model, batch)
    report = []
    for key, ref in want.items():
        scale = ref.abs().max().item()
        diff = (got[key] - ref).abs().max().item()
        check(diff <= 1e-5, f"{name}: {key} differs by {diff} (max |value| {scale})")
        report.append(f"{key} {diff:.1e} (scale {scale:.2f})")
    if "logits" in want:
        check(want["logits"].abs().max().item() > 0.3, f"{name}: logits too small to compare")
    loss_diff = abs(got["loss"].item() - loss.item())
    check(loss_diff <= 1e-5, f"{name}: loss {got['loss'].item()} vs transformers' {loss.item()}")
    worst = 0.0
    if check_grads:
        our_grads = {k[len("grad."):]: v for k, v in got.items() if k.startswith("grad.")}
        check(set(our_grads) == set(grads), f"{name}: gradient names differ: only ours "
                                            f"{sorted(set(our_grads) - set(grads))}, only transformers' "
                                            f"{sorted(set(grads) - set(our_grads))}")
        largest = max(g.abs().max().item() for g in grads.values())
        for key in sorted(set(our_grads) & set(grads)):
            ref = grads[key]
            if key.endswith("attention.self.key.bias"):
                # Zero in exact arithmetic (softmax ignores what a key bias adds to a whole row of
                # scores), so both sides hold rounding noise: check that it is noise.
                noise = max(our_grads[key].abs().max().item(), ref.abs().max().item()) / largest
                check(noise <= 1e-6, f"{name}: gradient of {key} is {noise:.1e} of the largest, not zero")
                continue
            rel = (our_grads[key] - ref).abs().max().item() / max(ref.abs().max().item(), 1e-12)
            worst = max(worst, rel)
            check(rel <= 1e-4, f"{name}: gradient of {key} differs by {rel:.2e} of its largest value")
    print(f"{name}: {', '.join(report)}; loss {loss.item():.5f} diff {loss_diff:.1e}; "
          f"{len(grads)} gradients, worst relative diff {worst:.1e}")
    return got, stdout


def conformance(forward_bin, work):
    for i, (name, (cls, changes, attn)) in enumerate(CASES.items()):
        torch.manual_seed(i)
        config = make_config(cls, changes)
        config._attn_implementation = attn
        model = cls(config)
        perturb(model, i)
        model_dir = os.path.join(work, name)
        model.save_pretrained(model_dir)
        batch = inputs(config, 100 + i, token_labels=name.endswith("token-classifier"))
        compare(name, forward_bin, model_dir, work, model, batch)
        if name == "classifier":
            sharded = os.path.join(work, name + "-sharded")
            model.save_pretrained(sharded, max_shard_size="20KB")
            check(os.path.exists(os.path.join(sharded, "model.safetensors.index.json")), "save_pretrained did not shard")
            compare(name + "-sharded", forward_bin, sharded, work, model, batch)
            # Stored in fp16, read into fp32: the reference holds the same rounded weights.
            half_dir = os.path.join(work, name + "-fp16")
            model.half().save_pretrained(half_dir)
            model.float()
            compare(name + "-fp16", forward_bin, half_dir, work, model, batch)
            round_trip(name, forward_bin, model_dir, work, batch)
        if name in ("bert-model", "roberta-model"):
            fresh_classifier(forward_bin, model_dir, work, model, batch, name)
        if name in ("roberta-classifier", "token-classifier", "roberta-token-classifier", "xlm-roberta-token-classifier",
                    "xlm-roberta-classifier"):
            round_trip(name, forward_bin, model_dir, work, batch, cls)
    masked_lm(forward_bin, work)
    roberta_masked_lm(forward_bin, work)
    for name, (changes, needle) in REFUSED.items():
        model_dir = os.path.join(work, name)
        os.makedirs(model_dir)
        with open(os.path.join(model_dir, "config.json"), "w") as f:
            json.dump(dict(BertConfig(**BASE).to_dict(), architectures=["BertForSequenceClassification"], **changes), f)
        p = subprocess.run([forward_bin, model_dir, "x", "y"], capture_output=True, text=True)
        check(p.returncode == 2 and needle in p.stderr, f"{name}: expected a refusal naming {needle}, got exit "
                                                        f"{p.returncode}: {p.stderr.strip()}")
        print(f"{name}: refused: {p.stderr.strip().splitlines()[0] if p.stderr.strip() else ''}")


def fresh_classifier(forward_bin, model_dir, work, model, batch, name):
    """A BertModel (RobertaModel) directory into a classifier: the encoder as saved, the classifier
    new and reported (RoBERTa's classifier has no pooler: its pooler is dropped and reported)."""
    label = name + "-into-classifier"
    got, stdout = ours(forward_bin, model_dir, work, label, batch, "--num-labels", "3")
    want, _, _ = reference(model, batch)
    key = "last_hidden_state" if name.startswith("roberta") else "pooled"
    diff = (got[key] - want[key]).abs().max().item()
    check(diff <= 1e-5, f"{label}: {key} differs by {diff}")
    check("newly initialised" in stdout and "classifier." in stdout,
          f"{label}: the fresh classifier is not reported: {stdout.strip()}")
    if name.startswith("roberta"):
        check("pooler" in stdout, f"{label}: the dropped pooler is not reported: {stdout.strip()}")
    print(f"{label}: {key} diff {diff:.1e}; {stdout.strip()}")


def roberta_masked_lm(forward_bin, work):
    """RobertaForMaskedLM (roberta-base's class) fine-tuned into a classifier: lm_head dropped, the
    encoder read, the head new."""
    torch.manual_seed(12)
    config = make_config(RobertaForMaskedLM, {})
    model = RobertaForMaskedLM(config)
    perturb(model, 12)
    model_dir = os.path.join(work, "roberta-masked-lm")
    model.save_pretrained(model_dir)
    batch = inputs(config, 112)
    got, stdout = ours(forward_bin, model_dir, work, "roberta-masked-lm", batch, "--num-labels", "3")
    model.eval()
    want = model.roberta(**{k: batch[k] for k in ("input_ids", "attention_mask", "token_type_ids")}).last_hidden_state
    diff = (got["last_hidden_state"] - want.detach()).abs().max().item()
    check(diff <= 1e-5, f"roberta-masked-lm: last hidden state differs by {diff}")
    check("lm_head" in stdout and "classifier.dense" in stdout, f"roberta-masked-lm: report {stdout.strip()}")
    print(f"roberta-masked-lm: last hidden state diff {diff:.1e}; {stdout.strip()}")


def masked_lm(forward_bin, work):
    """BertForMaskedLM: its cls.* head dropped, its encoder (no pooler) read, as transformers does."""
    torch.manual_seed(11)
    config = BertConfig(**BASE)
    model = BertForMaskedLM(config)
    perturb(model, 11)
    model_dir = os.path.join(work, "masked-lm")
    model.save_pretrained(model_dir)
    batch = inputs(config, 111)
    got, stdout = ours(forward_bin, model_dir, work, "masked-lm", batch)
    model.eval()
    want = model.bert(**{k: batch[k] for k in ("input_ids", "attention_mask", "token_type_ids")}).last_hidden_state
    diff = (got["last_hidden_state"] - want.detach()).abs().max().item()
    check(diff <= 1e-5, f"masked-lm: last hidden state differs by {diff}")
    check("cls.predictions" in stdout and "bert.pooler" in stdout, f"masked-lm: report {stdout.strip()}")
    print(f"masked-lm: last hidden state diff {diff:.1e}; {stdout.strip()}")


def round_trip(name, forward_bin, model_dir, work, batch, cls=BertForSequenceClassification):
    """hftrain's export of a loaded model, and of one it initialised, loads in transformers as `cls`."""
    export = os.path.join(work, name + "-export")
    got, _ = ours(forward_bin, model_dir, work, name + "-export", batch, "--export", export)
    born_dir = os.path.join(work, name + "-hftrain-born")
    os.makedirs(born_dir)
    with open(os.path.join(born_dir, "config.json"), "w") as f:
        json.dump(dict(make_config(cls, {}).to_dict(), architectures=[cls.__name__]), f)
    born_export = os.path.join(work, name + "-hftrain-born-export")
    born, _ = ours(forward_bin, born_dir, work, name + "-hftrain-born", batch, "--export", born_export)
    for label, out, directory in ((f"{name}: export of a loaded model", got, export),
                                  (f"{name}: export of an hftrain-initialised model", born, born_export)):
        shards = [f for f in os.listdir(directory) if f.endswith(".safetensors")]
        with open(os.path.join(directory, "config.json"), encoding="utf-8") as f:
            check(json.load(f)["architectures"] == [cls.__name__], f"{label}: not exported as {cls.__name__}")
        model = cls.from_pretrained(directory, dtype=torch.float32)
        check(model.config.id2label == {0: "negative", 1: "neutral", 2: "positive"},
              f"{label}: id2label {model.config.id2label}")
        model.eval()
        logits = model(**{k: batch[k] for k in ("input_ids", "attention_mask", "token_type_ids")}).logits.detach()
        diff = (logits - out["logits"]).abs().max().item()
        check(diff <= 1e-5, f"{label}: transformers' logits differ from hftrain's by {diff}")
        print(f"{label}: {len(shards)} shards, transformers' logits vs hftrain's {diff:.1e} "
              f"(scale {logits.abs().max().item():.2f})")


def main():
    forward_bin = sys.argv[1]
    torch.set_num_threads(1)
    hf_logging.disable_progress_bar()
    with tempfile.TemporaryDirectory(prefix="hftrain-hf-bert-") as work:
        conformance(forward_bin, work)
    print(f"{len(failures)} failures" if failures else
          "ok: hftrain's BERT and RoBERTa encoders equal transformers' outputs, loss and gradients, and their exports load there",
          file=sys.stderr if failures else sys.stdout)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
