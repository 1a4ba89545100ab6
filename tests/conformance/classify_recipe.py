"""The shipped sequence-classification recipe (recipes/classify-bert.yaml) end to end, against transformers.

A tiny random BertModel saved by transformers (no classifier: hftrain adds one over the labels of the
data) plus a WordPiece tokenizer.json is fine-tuned by `hftrain run classify-bert model.from=DIR` on
the shipped reviews (two labels, names). Checks: `hftrain config --provenance` takes the model's shape
from the directory; the validation accuracy hftrain reports reaches 0.9; `final/` loads in
transformers as BertForSequenceClassification with id2label {0: negative, 1: positive}, and its
predictions on the reviews (tokenized by the `tokenizers` library) are as accurate.

The same for RoBERTa: a tiny RobertaModel with a byte-level BPE tokenizer.json as RoBERTa's (<s>,
<pad> = 1, </s>; RobertaProcessing) trained by `tokenizers` on the reviews: fine-tuned by the same
recipe, final/ loads as RobertaForSequenceClassification and predicts as accurately.

Then five AdamW steps of the recipe on BertForSequenceClassification and RobertaForSequenceClassification
directories against transformers trained the same way with torch's AdamW (losses and final weights
within 1e-4; checkpointing, ZeRO-3 on 2 ranks and bf16 against the plain run: encoder_checks.training).

    .venv/bin/python tests/conformance/classify_recipe.py path/to/hftrain
"""
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import (BertConfig, BertForSequenceClassification, BertModel, RobertaConfig,
                          RobertaForSequenceClassification, RobertaModel)

import encoder_checks
from hf_decoders import check, check_provenance, failures  # the decoder conformance test's helpers

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(*args, **kw):
    p = subprocess.run(list(args), capture_output=True, text=True, **kw)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(args)} exited {p.returncode}:\n{p.stderr[-2000:]}")
    return p.stdout


def roberta_tokenizer(texts, path, vocab_size=400, add_prefix_space=False):
    """A byte-level BPE tokenizer.json laid out as RoBERTa's: <s> 0, <pad> 1, </s> 2, <unk> 3 (with the
    prefix space that transformers' is_split_into_words needs, for tagging)."""
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=add_prefix_space)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=vocab_size,
                                                       special_tokens=["<s>", "<pad>", "</s>", "<unk>"],
                                                       initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0), add_prefix_space=add_prefix_space)
    tok.save(path)
    return tok.get_vocab_size()


def fine_tune(hftrain, work, name, pretrained, data, rows, classifier_cls):
    """classify-bert on `pretrained`: provenance, validation accuracy, and transformers on final/."""
    env = dict(os.environ, HFTRAIN_RECIPES_DIR=os.path.join(ROOT, "recipes"),
               HFTRAIN_CACHE_DIR=os.path.join(work, "cache"))
    args = [f"model.from={pretrained}", f"data.train={data}", "optimizer.lr=3e-3", "trainer.max_epochs=8",
            "trainer.device=cpu"]
    roberta = classifier_cls is RobertaForSequenceClassification
    provenance = run(hftrain, "config", "classify-bert", *args, "--provenance", env=env)
    origin = "model.from " + os.path.join(pretrained, "config.json")
    expected = ("arch: bert", "n_layer: 2", "d_model: 32") + (("encoder: roberta",) if roberta else ())
    check_provenance(provenance, origin, expected, name)

    out = os.path.join(work, "run-" + name)
    run(hftrain, "run", "classify-bert", *args, f"run.output_dir={out}", env=env)
    with open(os.path.join(out, "metrics.jsonl"), encoding="utf-8") as f:
        evals = [r for r in map(json.loads, f) if r.get("type") == "eval"]
    check(evals and all("eval_accuracy" in r and "eval_f1" in r for r in evals), f"{name}: eval records lack accuracy/F1")
    best = max(r["eval_accuracy"] for r in evals)
    check(best >= 0.9, f"{name}: validation accuracy reached only {best}")

    model = classifier_cls.from_pretrained(os.path.join(out, "final"), dtype=torch.float32).eval()
    check(model.config.id2label == {0: "negative", 1: "positive"}, f"{name}: id2label {model.config.id2label}")
    tok = Tokenizer.from_file(os.path.join(out, "final", "tokenizer.json"))
    right = 0
    with torch.no_grad():
        for row in rows:
            ids = torch.tensor([tok.encode(row["text"]).ids])
            predicted = model.config.id2label[int(model(input_ids=ids).logits.argmax(-1))]
            right += predicted == row["label"]
    accuracy = right / len(rows)
    check(accuracy >= 0.9, f"{name}: transformers on hftrain's final/: accuracy {accuracy}")
    print(f"{name}: hftrain's best validation accuracy {best:.3f}; transformers ({classifier_cls.__name__}) on "
          f"final/: {accuracy:.3f} over {len(rows)} reviews")


def training(hftrain, work):
    """Five AdamW steps of classify-bert on BertForSequenceClassification and
    RobertaForSequenceClassification directories against transformers (encoder_checks.training)."""
    data, rows = encoder_checks.reviews(work)
    names = sorted({r["label"] for r in rows})
    labels = dict(num_labels=len(names), id2label=dict(enumerate(names)), label2id={n: i for i, n in enumerate(names)},
                  hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    bert_dir = os.path.join(work, "bert-train")
    tokenizer_file = os.path.join(ROOT, "tests/fixtures/data/hf_bert_tokenizer.json")
    tok = Tokenizer.from_file(tokenizer_file)
    torch.manual_seed(4)
    bert = BertForSequenceClassification(BertConfig(vocab_size=tok.get_vocab_size(), hidden_size=32, num_hidden_layers=2,
                                                    num_attention_heads=2, intermediate_size=64,
                                                    max_position_embeddings=64, **labels))
    bert.save_pretrained(bert_dir)
    shutil.copy(tokenizer_file, os.path.join(bert_dir, "tokenizer.json"))
    encoder_checks.training(hftrain, work, "bert", bert_dir, bert, tok, data, rows, names)

    roberta_dir = os.path.join(work, "roberta-train")
    os.makedirs(roberta_dir)
    vocab = roberta_tokenizer([r["text"] for r in rows], os.path.join(roberta_dir, "tokenizer.json"))
    torch.manual_seed(5)
    roberta = RobertaForSequenceClassification(RobertaConfig(
        vocab_size=vocab, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
        max_position_embeddings=66, type_vocab_size=1, pad_token_id=1, bos_token_id=0, eos_token_id=2,
        layer_norm_eps=1e-5, **labels))
    roberta.save_pretrained(roberta_dir)
    encoder_checks.training(hftrain, work, "roberta", roberta_dir, roberta,
                            Tokenizer.from_file(os.path.join(roberta_dir, "tokenizer.json")), data, rows, names)


def main():
    hftrain = sys.argv[1]
    torch.manual_seed(0)
    torch.set_num_threads(1)
    tokenizer_file = os.path.join(ROOT, "tests/fixtures/data/hf_bert_tokenizer.json")
    data = os.path.join(ROOT, "recipes/data/reviews_example.csv")
    with open(data, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    with tempfile.TemporaryDirectory(prefix="hftrain-classify-") as work:
        pretrained = os.path.join(work, "bert-tiny")
        config = BertConfig(vocab_size=Tokenizer.from_file(tokenizer_file).get_vocab_size(), hidden_size=32,
                            num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                            max_position_embeddings=64)
        BertModel(config).save_pretrained(pretrained)
        shutil.copy(tokenizer_file, os.path.join(pretrained, "tokenizer.json"))
        fine_tune(hftrain, work, "classify-bert", pretrained, data, rows, BertForSequenceClassification)

        roberta_dir = os.path.join(work, "roberta-tiny")
        os.makedirs(roberta_dir)
        vocab = roberta_tokenizer([r["text"] for r in rows], os.path.join(roberta_dir, "tokenizer.json"))
        # 64 tokens after the padding row and the one below it (positions start at pad + 1 = 2).
        RobertaModel(RobertaConfig(vocab_size=vocab, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                   intermediate_size=64, max_position_embeddings=66, type_vocab_size=1,
                                   pad_token_id=1, bos_token_id=0, eos_token_id=2,
                                   layer_norm_eps=1e-5)).save_pretrained(roberta_dir)
        fine_tune(hftrain, work, "classify-roberta", roberta_dir, data, rows, RobertaForSequenceClassification)
        training(hftrain, work)
    if failures:
        print(f"{len(failures)} failures", file=sys.stderr)
        return 1
    print("ok: the classification recipe fine-tunes BertModel and RobertaModel directories and transformers loads "
          "the results")
    return 0


if __name__ == "__main__":
    sys.exit(main())
