"""The shipped token-classification recipe (recipes/ner-bert.yaml) end to end, against transformers and
seqeval.

A tiny random BertModel (the WordPiece tokenizer.json of the fixtures), a tiny RobertaModel (a
byte-level BPE tokenizer as RoBERTa's, with the prefix space that transformers' is_split_into_words
needs), a tiny ModernBertModel (a byte-level BPE tokenizer with [CLS]/[SEP]) and a tiny DebertaV2Model
(DeBERTa-v3's structure, the WordPiece tokenizer) are fine-tuned by `hftrain run ner-bert model.from=DIR` on the shipped tagged sentences, each
evaluated on all of them. Checks, for each:
  - `hftrain config --provenance` takes model.task from the recipe and the shape from the directory;
  - final/ loads in transformers as BertForTokenClassification / RobertaForTokenClassification
    with the tags as id2label;
  - its predictions, on the words as the `tokenizers` library splits them (is_pretokenized, each
    word's first piece), give with seqeval the precision, recall, F1 and accuracy that hftrain
    reported at its last evaluation (1e-9), and hftrain's mean loss over the first pieces (1e-5);
  - the entity F1 reaches 0.9.
Then a CoNLL-column copy of the data trains to the same first losses as the JSONL, and LoRA on the
BERT tagger writes peft's TOKEN_CLS adapter, which peft loads over BertForTokenClassification with
hftrain's metrics and loss.

    .venv/bin/python tests/conformance/token_classify.py path/to/hftrain
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import torch
from seqeval.metrics import accuracy_score, f1_score, precision_score, recall_score
from tokenizers import Tokenizer
from peft import PeftModel
from transformers import (AutoModelForTokenClassification, BertConfig, BertForTokenClassification, BertModel,
                          DebertaV2Config, DebertaV2Model, ModernBertConfig, ModernBertModel, RobertaConfig,
                          RobertaModel)

from classify_recipe import roberta_tokenizer  # the classification recipe test's RoBERTa tokenizer
from hf_modernbert import tokenizer as modernbert_tokenizer  # the ModernBERT test's
from hf_decoders import check, check_provenance, failures  # the decoder conformance test's helpers

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "recipes/data/ner_example.jsonl")


def run(*args, **kw):
    p = subprocess.run(list(args), capture_output=True, text=True, **kw)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(args[:3])} ... exited {p.returncode}:\n{p.stderr[-2000:]}")
    return p.stdout


def sentences():
    with open(DATA, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def reference(model_dir, rows, model=None):
    """transformers' word-level predictions (each word's first piece) and mean loss over first pieces."""
    if model is None:
        model = AutoModelForTokenClassification.from_pretrained(model_dir, dtype=torch.float32).eval()
    tok = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
    label2id = model.config.label2id
    truth, predicted, losses = [], [], []
    with torch.no_grad():
        for row in rows:
            enc = tok.encode(row["tokens"], is_pretokenized=True)
            logits = model(input_ids=torch.tensor([enc.ids])).logits[0]
            first, seen = [], set()
            for i, w in enumerate(enc.word_ids):
                if w is not None and w not in seen:
                    seen.add(w)
                    first.append((i, w))
            labels = torch.tensor([label2id[row["ner_tags"][w]] for _, w in first])
            positions = torch.tensor([i for i, _ in first])
            losses.append(torch.nn.functional.cross_entropy(logits[positions], labels, reduction="sum").item())
            truth.append([row["ner_tags"][w] for _, w in first])
            predicted.append([model.config.id2label[int(logits[i].argmax())] for i, _ in first])
    pieces = sum(len(t) for t in truth)
    return model, truth, predicted, sum(losses) / pieces


def agrees(name, last, truth, predicted, loss):
    """hftrain's last evaluation against seqeval on the reference's predictions, and its loss."""
    theirs = {"eval_precision": precision_score(truth, predicted), "eval_recall": recall_score(truth, predicted),
              "eval_f1": f1_score(truth, predicted), "eval_accuracy": accuracy_score(truth, predicted)}
    for key, value in theirs.items():
        check(abs(last[key] - value) <= 1e-9, f"{name}: hftrain's {key} {last[key]}, seqeval on the reference's "
                                               f"predictions {value}")
    check(abs(last["eval_loss"] - loss) / loss <= 1e-5, f"{name}: eval_loss {last['eval_loss']}, the reference's {loss}")


def last_eval(out):
    with open(os.path.join(out, "metrics.jsonl"), encoding="utf-8") as f:
        evals = [r for r in map(json.loads, f) if r.get("type") == "eval"]
    return evals[-1] if evals else {}


def lora(hftrain, work, env, args, pretrained, rows):
    """LoRA on the BERT tagger: peft's TOKEN_CLS adapter, loaded by peft with hftrain's metrics."""
    out = os.path.join(work, "run-ner-lora")
    run(hftrain, "run", "ner-bert", *args, "peft.method=lora", "peft.lora.target_modules=[all-linear]",
        "trainer.max_epochs=3", f"run.output_dir={out}", env=env)
    final = os.path.join(out, "final")
    with open(os.path.join(final, "adapter_config.json"), encoding="utf-8") as f:
        adapter = json.load(f)
    check(adapter.get("task_type") == "TOKEN_CLS", f"ner-lora: task_type {adapter.get('task_type')}")
    tags = sorted({t for r in rows for t in r["ner_tags"]})
    base = BertForTokenClassification.from_pretrained(pretrained, num_labels=len(tags), dtype=torch.float32,
                                                      id2label=dict(enumerate(tags)),
                                                      label2id={t: i for i, t in enumerate(tags)})
    model = PeftModel.from_pretrained(base, final).eval()
    _, truth, predicted, loss = reference(final, rows, model)  # final/ holds the tokenizer.json
    last = last_eval(out)
    agrees("ner-lora", last, truth, predicted, loss)
    merged = os.path.join(work, "ner-lora-merged")
    run(hftrain, "export", final, "--hf", merged, "--merge", env=env)
    exported = AutoModelForTokenClassification.from_pretrained(merged, dtype=torch.float32).eval()
    check(type(exported).__name__ == "BertForTokenClassification", f"ner-lora: merged as {type(exported).__name__}")
    ids = torch.tensor([[2, 40, 41, 42, 3]])
    with torch.no_grad():
        diff = (exported(input_ids=ids).logits - model(input_ids=ids).logits).abs().max().item()
    check(diff <= 1e-5, f"ner-lora: the merged export's logits differ from peft's by {diff}")
    print(f"ner-lora: peft (TOKEN_CLS) gives hftrain's F1 {last['eval_f1']:.4f} and loss {loss:.6f} "
          f"({last['eval_loss']:.6f}); merged export vs peft {diff:.1e}")


def fine_tune(hftrain, work, name, pretrained, rows, expected_class):
    env = dict(os.environ, HFTRAIN_RECIPES_DIR=os.path.join(ROOT, "recipes"),
               HFTRAIN_CACHE_DIR=os.path.join(work, "cache"))
    args = [f"model.from={pretrained}", f"data.train={DATA}", f"data.validation={DATA}", "data.validation_fraction=0",
            "optimizer.lr=5e-3", "trainer.max_epochs=6", "trainer.eval_every=50", "trainer.device=cpu"]
    provenance = run(hftrain, "config", "ner-bert", *args, "--provenance", env=env)
    check_provenance(provenance, "model.from " + os.path.join(pretrained, "config.json"), ("n_layer: 2", "d_model: 32"),
                     name)
    check("task: token_classification" in provenance, f"{name}: model.task not in the provenance")
    out = os.path.join(work, "run-" + name)
    run(hftrain, "run", "ner-bert", *args, f"run.output_dir={out}", env=env)
    last = last_eval(out)
    check(all(k in last for k in ("eval_precision", "eval_recall", "eval_f1", "eval_accuracy")),
          f"{name}: eval records lack the entity metrics: {last}")
    final = os.path.join(out, "final")
    with open(os.path.join(final, "config.json"), encoding="utf-8") as f:
        arch = json.load(f)["architectures"]
    check(arch == [expected_class], f"{name}: final/ is {arch}, expected {expected_class}")
    model, truth, predicted, loss = reference(final, rows)
    tags = sorted({t for r in rows for t in r["ner_tags"]})
    check(list(model.config.id2label.values()) == tags, f"{name}: id2label {model.config.id2label}")
    agrees(name, last, truth, predicted, loss)
    check(last["eval_f1"] >= 0.9, f"{name}: entity F1 reached only {last['eval_f1']}")
    print(f"{name}: eval precision {last['eval_precision']:.4f} recall {last['eval_recall']:.4f} F1 "
          f"{last['eval_f1']:.4f} accuracy {last['eval_accuracy']:.4f}; seqeval on transformers' predictions of "
          f"final/ ({expected_class}) the same; eval_loss {last['eval_loss']:.6f} vs {loss:.6f}")
    return env, args


def conll_copy(hftrain, work, env, pretrained, rows):
    """The same sentences as CoNLL columns (word, a dummy column, tag) train as the JSONL does."""
    conll = os.path.join(work, "ner.conll")
    with open(conll, "w", encoding="utf-8") as f:
        f.write("-DOCSTART- -X- O\n\n")
        for r in rows:
            for w, t in zip(r["tokens"], r["ner_tags"]):
                f.write(f"{w} X {t}\n")
            f.write("\n")
    losses = {}
    for label, data in (("jsonl", DATA), ("conll", conll)):
        out = os.path.join(work, "short-" + label)
        run(hftrain, "run", "ner-bert", f"model.from={pretrained}", f"data.train={data}", "data.validation_fraction=0",
            "trainer.max_steps=5", "trainer.eval_every=0", "trainer.log_every=1", "scheduler.warmup_steps=0",
            "trainer.device=cpu", "checkpoint.at_end=false", f"run.output_dir={out}", env=env)
        with open(os.path.join(out, "metrics.jsonl"), encoding="utf-8") as f:
            losses[label] = [r["loss"] for r in map(json.loads, f) if r.get("type") == "train"]
    check(losses["jsonl"] == losses["conll"] and len(losses["jsonl"]) == 5,
          f"CoNLL columns train otherwise than JSONL: {losses}")
    print(f"CoNLL columns: the same 5 losses as the JSONL ({losses['conll'][0]:.5f} -> {losses['conll'][-1]:.5f})")


def main():
    hftrain = sys.argv[1]
    torch.manual_seed(0)
    torch.set_num_threads(1)
    rows = sentences()
    with tempfile.TemporaryDirectory(prefix="hftrain-ner-") as work:
        tokenizer_file = os.path.join(ROOT, "tests/fixtures/data/hf_bert_tokenizer.json")
        bert = os.path.join(work, "bert-tiny")
        BertModel(BertConfig(vocab_size=Tokenizer.from_file(tokenizer_file).get_vocab_size(), hidden_size=32,
                             num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                             max_position_embeddings=64)).save_pretrained(bert)
        shutil.copy(tokenizer_file, os.path.join(bert, "tokenizer.json"))
        env, args = fine_tune(hftrain, work, "ner-bert", bert, rows, "BertForTokenClassification")
        conll_copy(hftrain, work, env, bert, rows)
        lora(hftrain, work, env, args, bert, rows)

        roberta = os.path.join(work, "roberta-tiny")
        os.makedirs(roberta)
        vocab = roberta_tokenizer([" ".join(r["tokens"]) for r in rows], os.path.join(roberta, "tokenizer.json"),
                                  vocab_size=500, add_prefix_space=True)
        RobertaModel(RobertaConfig(vocab_size=vocab, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                   intermediate_size=64, max_position_embeddings=66, type_vocab_size=1,
                                   pad_token_id=1, bos_token_id=0, eos_token_id=2,
                                   layer_norm_eps=1e-5)).save_pretrained(roberta)
        fine_tune(hftrain, work, "ner-roberta", roberta, rows, "RobertaForTokenClassification")

        modernbert = os.path.join(work, "modernbert-tiny")
        os.makedirs(modernbert)
        tok = modernbert_tokenizer([" ".join(r["tokens"]) for r in rows], os.path.join(modernbert, "tokenizer.json"),
                                   vocab_size=500, add_prefix_space=True)
        torch.manual_seed(0)
        ModernBertModel(ModernBertConfig(vocab_size=tok.get_vocab_size(), hidden_size=32, num_hidden_layers=2,
                                         num_attention_heads=2, intermediate_size=48, max_position_embeddings=64,
                                         local_attention=8, pad_token_id=0, bos_token_id=1, cls_token_id=1,
                                         eos_token_id=2, sep_token_id=2)).save_pretrained(modernbert)
        fine_tune(hftrain, work, "ner-modernbert", modernbert, rows, "ModernBertForTokenClassification")

        deberta = os.path.join(work, "deberta-tiny")
        torch.manual_seed(0)
        DebertaV2Model(DebertaV2Config(vocab_size=Tokenizer.from_file(tokenizer_file).get_vocab_size(), hidden_size=32,
                                       num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                                       max_position_embeddings=64, relative_attention=True, position_buckets=16,
                                       norm_rel_ebd="layer_norm", share_att_key=True, pos_att_type=["p2c", "c2p"],
                                       position_biased_input=False, type_vocab_size=0)).save_pretrained(deberta)
        shutil.copy(tokenizer_file, os.path.join(deberta, "tokenizer.json"))
        fine_tune(hftrain, work, "ner-deberta", deberta, rows, "DebertaV2ForTokenClassification")
    if failures:
        print(f"{len(failures)} failures", file=sys.stderr)
        return 1
    print("ok: token classification fine-tunes BERT, RoBERTa, ModernBERT and DeBERTa directories; transformers and seqeval "
          "agree with hftrain's evaluation")
    return 0


if __name__ == "__main__":
    sys.exit(main())
