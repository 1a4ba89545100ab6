"""hftrain's ModernBERT encoder against transformers, on tiny random models it makes itself.

Forward and backward (hftrain_bert_forward): ModernBertForSequenceClassification with 4 layers whose
sliding ones attend 2 tokens either side (local_attention 4) of sequences up to 11 tokens, padding,
RoPE bases of both layer types; every parameter perturbed. Logits, loss and every gradient equal
transformers' (1e-5, gradients 1e-4 of their largest value). Cases: ModernBERT-base's structure (no
biases, [CLS] pooling, GELU); every bias on with mean pooling, the tanh GELU, a ReLU head, other RoPE
bases, a first layer that slides and eager attention; a token classifier; ModernBertModel (last hidden
state); a config.json written by transformers 4.x (global_attn_every_n_layers, global_rope_theta,
local_rope_theta, no layer_types) equal to its transformers-5 twin; ModernBertForMaskedLM fine-tuned
into a classifier (its head loaded, decoder dropped, classifier new) and ModernBertModel into one (head
and classifier new). Exports of loaded and of hftrain-initialised models load in transformers as
the same class with hftrain's logits. Refusals name the field: scaled RoPE, a pooling hftrain lacks,
regression.

Training (`hftrain run classify-bert model.from=DIR` on the shipped reviews, one full batch per step,
AdamW, constant learning rate): the losses of 5 steps equal those of transformers trained from the
same weights with torch's AdamW (1e-4 relative), and so do the final weights; `hftrain plan` counts
transformers' number of parameters; the same run with
activation checkpointing gives the same losses, and ZeRO-3 on 2 ranks (half the batch each) too;
bf16 within 2e-2.

    .venv/bin/python tests/conformance/hf_modernbert.py path/to/hftrain_bert_forward path/to/hftrain
"""
import json
import os
import sys

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import (ModernBertConfig, ModernBertForMaskedLM, ModernBertForSequenceClassification,
                          ModernBertForTokenClassification, ModernBertModel)
from transformers.utils import logging as hf_logging

hf_logging.set_verbosity_error()
import encoder_checks  # noqa: E402
from encoder_checks import compare, refusals, reviews, round_trip  # noqa: E402
from hf_bert import inputs, ours  # noqa: E402 (the BERT conformance test's batch and runner)
from hf_decoders import check, perturb  # noqa: E402


BASE = dict(vocab_size=61, hidden_size=24, intermediate_size=20, num_hidden_layers=4, num_attention_heads=3,
            max_position_embeddings=32, local_attention=4, pad_token_id=0, bos_token_id=1, cls_token_id=1,
            eos_token_id=2, sep_token_id=2, initializer_range=0.2, num_labels=3,
            id2label={0: "negative", 1: "neutral", 2: "positive"},
            label2id={"negative": 0, "neutral": 1, "positive": 2})

# name -> (model class, config changes, attention implementation)
CASES = {
    "modernbert-classifier": (ModernBertForSequenceClassification, {}, "sdpa"),
    "modernbert-classifier-biases-mean": (ModernBertForSequenceClassification, dict(
        norm_bias=True, attention_bias=True, mlp_bias=True, classifier_bias=True, classifier_pooling="mean",
        hidden_activation="gelu_pytorch_tanh", classifier_activation="relu",
        layer_types=["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
        rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 5000.0},
                         "sliding_attention": {"rope_type": "default", "rope_theta": 300.0}}), "eager"),
    "modernbert-token-classifier": (ModernBertForTokenClassification, {}, "sdpa"),
    "modernbert-model": (ModernBertModel, {}, "sdpa"),
}

REFUSED = {
    "scaled-rope": ({"rope_parameters": {"full_attention": {"rope_type": "linear", "factor": 2.0, "rope_theta": 1e4},
                                         "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}}},
                    "rope_type"),
    "max-pooling": ({"classifier_pooling": "max"}, "classifier_pooling"),
    "regression": ({"problem_type": "regression"}, "problem_type"),
}


def make(cls, changes, seed, attn="sdpa"):
    torch.manual_seed(seed)
    config = ModernBertConfig(**dict(BASE, **changes))
    config._attn_implementation = attn
    model = cls(config)
    perturb(model, seed)
    return config, model


def batch_for(config, seed, token_labels=False):
    b = inputs(config, seed, token_labels)
    b["token_type_ids"] = torch.zeros_like(b["input_ids"])  # hftrain_bert_forward reads them; ModernBERT ignores them
    return b


def old_style_config(forward_bin, work):
    """A transformers 4.x config.json (global_attn_every_n_layers 2, global/local_rope_theta) reads as
    its transformers-5 twin (layer_types, rope_parameters)."""
    changes = dict(layer_types=["full_attention", "sliding_attention", "full_attention", "sliding_attention"],
                   rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 20000.0},
                                    "sliding_attention": {"rope_type": "default", "rope_theta": 500.0}})
    config, model = make(ModernBertForSequenceClassification, changes, 7)
    model_dir = os.path.join(work, "modernbert-4x-config")
    model.save_pretrained(model_dir)
    with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
        saved = json.load(f)
    for key in ("layer_types", "rope_parameters"):
        saved.pop(key)
    saved.update(global_attn_every_n_layers=2, global_rope_theta=20000.0, local_rope_theta=500.0)
    with open(os.path.join(model_dir, "config.json"), "w", encoding="utf-8") as f:
        json.dump(saved, f)
    compare("modernbert-4x-config", forward_bin, model_dir, work, model, batch_for(config, 107))


def heads(forward_bin, work):
    """ModernBertForMaskedLM and ModernBertModel directories fine-tuned into classifiers."""
    config, mlm = make(ModernBertForMaskedLM, {}, 8)
    mlm_dir = os.path.join(work, "modernbert-mlm")
    mlm.save_pretrained(mlm_dir)
    batch = batch_for(config, 108)
    got, stdout = ours(forward_bin, mlm_dir, work, "modernbert-mlm", batch, "--num-labels", "3")
    mlm.eval()
    want = mlm.model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state.detach()
    real = batch["attention_mask"].bool()
    diff = (got["last_hidden_state"][real] - want[real]).abs().max().item()
    check(diff <= 1e-5, f"modernbert-mlm: last hidden state differs by {diff}")
    check("decoder" in stdout and "classifier." in stdout and "head." not in stdout,
          f"modernbert-mlm: the decoder dropped and only the classifier new: {stdout.strip()}")
    # The classifier's head is the masked-LM head: the same features before the new classifier.
    classifier = ModernBertForSequenceClassification.from_pretrained(mlm_dir, num_labels=3).eval()
    check(torch.equal(classifier.head.dense.weight, mlm.head.dense.weight), "transformers moved the MLM head")
    print(f"modernbert-mlm into a classifier: last hidden state diff {diff:.1e}; {stdout.strip()}")

    config, encoder = make(ModernBertModel, {}, 9)
    enc_dir = os.path.join(work, "modernbert-encoder")
    encoder.save_pretrained(enc_dir)
    got, stdout = ours(forward_bin, enc_dir, work, "modernbert-encoder", batch, "--num-labels", "3")
    check("head." in stdout and "classifier." in stdout, f"modernbert-encoder: head and classifier new: {stdout}")
    print(f"modernbert-model into a classifier: {stdout.strip()}")


def conformance(forward_bin, work):
    for i, (name, (cls, changes, attn)) in enumerate(CASES.items()):
        config, model = make(cls, changes, i, attn)
        model_dir = os.path.join(work, name)
        model.save_pretrained(model_dir)
        batch = batch_for(config, 100 + i, token_labels=name.endswith("token-classifier"))
        compare(name, forward_bin, model_dir, work, model, batch)
        if cls is not ModernBertModel:
            round_trip(name, forward_bin, model_dir, work, batch, cls)
    old_style_config(forward_bin, work)
    heads(forward_bin, work)
    refusals(forward_bin, work, dict(ModernBertConfig(**BASE).to_dict(),
                                     architectures=["ModernBertForSequenceClassification"]), REFUSED)


def tokenizer(texts, path, vocab_size=300, add_prefix_space=False):
    """A byte-level BPE tokenizer.json with ModernBERT's layout: [PAD] 0, [CLS] 1, [SEP] 2, [UNK] 3,
    [CLS] text [SEP] (with the prefix space that transformers' is_split_into_words needs, for tagging)."""
    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=add_prefix_space)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=vocab_size,
                                                       special_tokens=["[PAD]", "[CLS]", "[SEP]", "[UNK]"],
                                                       initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
                                                       special_tokens=[("[CLS]", 1), ("[SEP]", 2)])
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    tok.save(path)
    return tok


def training(hftrain, work):
    data, rows = reviews(work)
    pretrained = os.path.join(work, "modernbert-tiny")
    os.makedirs(pretrained)
    tok = tokenizer([r["text"] for r in rows], os.path.join(pretrained, "tokenizer.json"))
    names = sorted({r["label"] for r in rows})
    config = ModernBertConfig(**dict(BASE, vocab_size=tok.get_vocab_size(), max_position_embeddings=64,
                                     local_attention=8, num_labels=len(names), initializer_range=0.02,
                                     id2label=dict(enumerate(names)), label2id={n: i for i, n in enumerate(names)}))
    torch.manual_seed(3)
    model = ModernBertForSequenceClassification(config)
    model.save_pretrained(pretrained)
    encoder_checks.training(hftrain, work, "modernbert", pretrained, model, tok, data, rows, names)


if __name__ == "__main__":
    hf_logging.disable_progress_bar()
    sys.exit(encoder_checks.main("ModernBERT", conformance, training))
