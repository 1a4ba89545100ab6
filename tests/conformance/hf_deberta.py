"""hftrain's DeBERTa-v2/v3 encoder against transformers, on tiny random models it makes itself.

Forward and backward (hftrain_bert_forward): logits, loss and every gradient equal transformers'
(1e-5; gradients 1e-4 of their largest value) on a batch with padding, every parameter perturbed:
  - DeBERTa-v3's structure: relative attention over log buckets (8 buckets, so the 11-token
    sequences reach the logarithmic part), shared position keys, p2c and c2p, the relative
    embeddings LayerNorm'd, no absolute positions or token types; as a sequence classifier
    (ContextPooler), a token classifier with c2p alone, and DebertaV2Model;
  - DeBERTa-v2's options: its own pos_key_proj / pos_query_proj, distances clamped at
    max_relative_positions 6 without buckets, absolute positions, two token types, word embeddings
    of 16 projected by embed_proj, gelu_new, a ReLU pooler;
  - no relative attention (the scale still counts pos_att_type's terms, as transformers does).
DebertaV2ForMaskedLM directories (legacy and new heads) fine-tuned into a classifier: heads dropped,
pooler and classifier new. Exports of loaded and hftrain-initialised classifiers load in transformers
with hftrain's logits. Refusals name the field: deberta-v2-xlarge's convolution, an unknown position
term, regression. Training: five AdamW steps of classify-bert on a DeBERTa-v3 classifier against
transformers (encoder_checks.training).

    .venv/bin/python tests/conformance/hf_deberta.py path/to/hftrain_bert_forward path/to/hftrain
"""
import os
import sys

import torch
from tokenizers import Tokenizer
from transformers import (DebertaV2Config, DebertaV2ForMaskedLM, DebertaV2ForSequenceClassification,
                          DebertaV2ForTokenClassification, DebertaV2Model)
from transformers.utils import logging as hf_logging

hf_logging.set_verbosity_error()
import encoder_checks  # noqa: E402
from encoder_checks import ROOT, compare, refusals, reviews, round_trip  # noqa: E402
from hf_bert import inputs, ours  # noqa: E402
from hf_decoders import check, perturb  # noqa: E402

BASE = dict(vocab_size=53, hidden_size=24, num_hidden_layers=2, num_attention_heads=3, intermediate_size=37,
            max_position_embeddings=20, initializer_range=0.2, layer_norm_eps=1e-7, hidden_dropout_prob=0.1,
            attention_probs_dropout_prob=0.1, pad_token_id=0, num_labels=3,
            id2label={0: "negative", 1: "neutral", 2: "positive"},
            label2id={"negative": 0, "neutral": 1, "positive": 2})
V3 = dict(relative_attention=True, position_buckets=8, norm_rel_ebd="layer_norm", share_att_key=True,
          pos_att_type=["p2c", "c2p"], max_relative_positions=-1, position_biased_input=False, type_vocab_size=0)
V2 = dict(relative_attention=True, position_buckets=-1, max_relative_positions=6, norm_rel_ebd="none",
          share_att_key=False, pos_att_type="c2p|p2c", position_biased_input=True, type_vocab_size=2,
          embedding_size=16, hidden_act="gelu_new", pooler_hidden_act="relu", cls_dropout=0.2)

# name -> (model class, config)
CASES = {
    "deberta-v3-classifier": (DebertaV2ForSequenceClassification, V3),
    "deberta-v2-own-keys": (DebertaV2ForSequenceClassification, V2),
    "deberta-v3-token-classifier-c2p": (DebertaV2ForTokenClassification, dict(V3, pos_att_type=["c2p"])),
    "deberta-v3-model": (DebertaV2Model, V3),
    "deberta-no-relative": (DebertaV2ForSequenceClassification, dict(V2, relative_attention=False)),
}

REFUSED = {
    "convolution": ({"conv_kernel_size": 3}, "conv_kernel_size"),
    "position-term": ({"pos_att_type": ["c2p", "q2k"]}, "pos_att_type"),
    "regression": ({"problem_type": "regression"}, "problem_type"),
}


def make(cls, changes, seed):
    torch.manual_seed(seed)
    config = DebertaV2Config(**dict(BASE, **changes))
    model = cls(config)
    perturb(model, seed)
    return config, model


def masked_lm(forward_bin, work):
    """DebertaV2ForMaskedLM directories into a classifier: the encoder read, the heads dropped."""
    for legacy in (True, False):
        name = f"deberta-mlm-{'legacy' if legacy else 'new'}"
        config, model = make(DebertaV2ForMaskedLM, dict(V3, legacy=legacy), 20 + legacy)
        model_dir = os.path.join(work, name)
        model.save_pretrained(model_dir)
        batch = inputs(config, 120 + legacy)
        got, stdout = ours(forward_bin, model_dir, work, name, batch, "--num-labels", "3")
        model.eval()
        want = model.deberta(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
        real = batch["attention_mask"].bool()
        diff = (got["last_hidden_state"][real] - want.detach()[real]).abs().max().item()
        check(diff <= 1e-5, f"{name}: last hidden state differs by {diff}")
        head = "cls." if legacy else "lm_predictions."
        check(head in stdout and "pooler." in stdout and "classifier." in stdout,
              f"{name}: the MLM head dropped, pooler and classifier new: {stdout.strip()}")
        print(f"{name} into a classifier: last hidden state diff {diff:.1e}; {stdout.strip()}")


def conformance(forward_bin, work):
    for i, (name, (cls, changes)) in enumerate(CASES.items()):
        config, model = make(cls, changes, i)
        model_dir = os.path.join(work, name)
        model.save_pretrained(model_dir)
        batch = inputs(config, 100 + i, token_labels=cls is DebertaV2ForTokenClassification)
        compare(name, forward_bin, model_dir, work, model, batch)
        if cls is not DebertaV2Model:
            round_trip(name, forward_bin, model_dir, work, batch, cls)
    masked_lm(forward_bin, work)
    refusals(forward_bin, work, dict(DebertaV2Config(**dict(BASE, **V3)).to_dict(),
                                     architectures=["DebertaV2ForSequenceClassification"]), REFUSED)


def training(hftrain, work):
    data, rows = reviews(work)
    tokenizer_file = os.path.join(ROOT, "tests/fixtures/data/hf_bert_tokenizer.json")
    tok = Tokenizer.from_file(tokenizer_file)
    pretrained = os.path.join(work, "deberta-tiny")
    names = sorted({r["label"] for r in rows})
    config = DebertaV2Config(**dict(BASE, **dict(V3, vocab_size=tok.get_vocab_size(), max_position_embeddings=64,
                                                 position_buckets=16, hidden_dropout_prob=0.0,
                                                 attention_probs_dropout_prob=0.0, initializer_range=0.02,
                                                 num_labels=len(names), id2label=dict(enumerate(names)),
                                                 label2id={n: i for i, n in enumerate(names)})))
    torch.manual_seed(3)
    model = DebertaV2ForSequenceClassification(config)
    model.save_pretrained(pretrained)
    with open(os.path.join(pretrained, "tokenizer.json"), "w", encoding="utf-8") as f:
        f.write(open(tokenizer_file, encoding="utf-8").read())
    encoder_checks.training(hftrain, work, "deberta-v3", pretrained, model, tok, data, rows, names)


if __name__ == "__main__":
    hf_logging.disable_progress_bar()
    sys.exit(encoder_checks.main("DeBERTa-v2/v3", conformance, training))
