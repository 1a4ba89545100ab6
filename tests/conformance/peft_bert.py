"""LoRA on a BERT sequence classifier against the peft library.

    .venv/bin/python tests/conformance/peft_bert.py path/to/hftrain

A tiny random BertModel saved by transformers (no classifier) is fine-tuned by `hftrain run
classify-bert` with peft.method=lora on the shipped reviews (two labels), every linear layer of the
encoder adapted. Then:
  - final/ holds peft's adapter_config.json (task_type SEQ_CLS, the classifier in
    modules_to_save) and adapter_model.safetensors, and the checkpoint only the trained tensors
    (the adapters and the classifier);
  - peft.PeftModel.from_pretrained(BertForSequenceClassification(base), final/) gives, over every
    review (tokenized by the `tokenizers` library), the mean cross-entropy hftrain reported as its
    last eval_loss (1e-5 relative), and classifies them as accurately;
  - `hftrain export --hf --merge` writes a BertForSequenceClassification directory (id2label from
    the run) whose logits equal peft's;
  - a resume from a mid-run checkpoint gives the uninterrupted run's losses bit for bit (dropout
    included), and two ranks under zero2 give one rank's losses (two micro-batches) within 1e-5 on
    a base without dropout.
The same adapter checks for a RobertaModel base (a byte-level BPE tokenizer as RoBERTa's): its head
(classifier.dense and classifier.out_proj) is saved whole under modules_to_save ["classifier"], as
peft saves RobertaForSequenceClassification's, and peft's loss and the merged export agree. And for a
ModernBertModel base: its head (head.dense, head.norm; new, as the classifier) saved whole under
modules_to_save ["classifier", "head"]; and for a DeBERTa-v3 DebertaV2Model base, its pooler under
["classifier", "pooler"].
Exits 1 on any difference.
"""
import csv
import json
import os
import shutil
import sys
import tempfile

import torch
from peft import PeftModel
from safetensors import safe_open
from tokenizers import Tokenizer
from transformers import (BertConfig, BertForSequenceClassification, BertModel, DebertaV2Config,
                          DebertaV2ForSequenceClassification, DebertaV2Model, ModernBertConfig,
                          ModernBertForSequenceClassification, ModernBertModel, RobertaConfig,
                          RobertaForSequenceClassification, RobertaModel)

from classify_recipe import roberta_tokenizer
from hf_modernbert import tokenizer as modernbert_tokenizer

from peft_common import check, finish, largest_relative_difference, losses_of, run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "recipes/data/reviews_example.csv")


def make_base(work, dropout=0.1):
    torch.manual_seed(0)
    tokenizer_file = os.path.join(ROOT, "tests/fixtures/data/hf_bert_tokenizer.json")
    base = os.path.join(work, f"bert-tiny-{dropout}")
    config = BertConfig(vocab_size=Tokenizer.from_file(tokenizer_file).get_vocab_size(), hidden_size=32,
                        num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, max_position_embeddings=64,
                        hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout)
    BertModel(config).save_pretrained(base)
    shutil.copy(tokenizer_file, os.path.join(base, "tokenizer.json"))
    return base


def reviews():
    with open(DATA, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def last_eval(run_dir):
    with open(os.path.join(run_dir, "metrics.jsonl"), encoding="utf-8") as f:
        evals = [r for r in map(json.loads, f) if r.get("type") == "eval"]
    return evals[-1]


def evaluate(model, tokenizer, rows, labels):
    """Mean cross-entropy and accuracy over `rows`, one review at a time (no padding)."""
    losses, right = [], 0
    with torch.no_grad():
        for row in rows:
            logits = model(input_ids=torch.tensor([tokenizer.encode(row["text"]).ids])).logits.float()
            target = torch.tensor([labels.index(row["label"])])
            losses.append(torch.nn.functional.cross_entropy(logits, target).item())
            right += int(logits.argmax(-1)) == int(target)
    return sum(losses) / len(losses), right / len(rows)


def adapter_agrees(hftrain, work, env, name, base, cls, common, saved=("classifier",)):
    """A LoRA run on `base`; peft's loss over the reviews equals hftrain's last eval_loss, and the
    merged export's logits equal peft's."""
    out = os.path.join(work, name)
    run(hftrain, "run", "classify-bert", *common, f"model.from={base}", "trainer.max_epochs=4",
        "trainer.eval_every=40", f"run.output_dir={out}", env=env)
    final = os.path.join(out, "final")
    with open(os.path.join(final, "adapter_config.json"), encoding="utf-8") as f:
        check(json.load(f).get("modules_to_save") == list(saved), f"{name}: modules_to_save")
    rows = reviews()
    tokenizer = Tokenizer.from_file(os.path.join(final, "tokenizer.json"))
    reported = last_eval(out)
    peft_model = PeftModel.from_pretrained(cls.from_pretrained(base, num_labels=2, dtype=torch.float32), final).eval()
    loss, accuracy = evaluate(peft_model, tokenizer, rows, ["negative", "positive"])
    difference = abs(loss - reported["eval_loss"]) / reported["eval_loss"]
    check(difference <= 1e-5, f"{name}: peft's loss {loss}, hftrain's eval_loss {reported['eval_loss']}")
    check(abs(accuracy - reported["eval_accuracy"]) < 1e-9, f"{name}: peft's accuracy {accuracy}, hftrain's "
                                                            f"{reported['eval_accuracy']}")
    merged = os.path.join(work, name + "-merged")
    run(hftrain, "export", final, "--hf", merged, "--merge")
    exported = cls.from_pretrained(merged, dtype=torch.float32).eval()
    ids = torch.tensor([tokenizer.encode(rows[0]["text"]).ids])
    with torch.no_grad():
        mdiff = (exported(input_ids=ids).logits - peft_model(input_ids=ids).logits).abs().max().item()
    check(mdiff <= 1e-5, f"{name}: the merged export's logits differ from peft's by {mdiff}")
    print(f"{name}: peft's loss {loss:.6f}, hftrain's eval_loss {reported['eval_loss']:.6f} ({difference:.1e}); "
          f"accuracy {accuracy:.3f}; merged export vs peft {mdiff:.1e}")


def roberta_base(work):
    torch.manual_seed(0)
    base = os.path.join(work, "roberta-tiny")
    os.makedirs(base)
    vocab = roberta_tokenizer([r["text"] for r in reviews()], os.path.join(base, "tokenizer.json"))
    RobertaModel(RobertaConfig(vocab_size=vocab, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                               intermediate_size=64, max_position_embeddings=66, type_vocab_size=1, pad_token_id=1,
                               bos_token_id=0, eos_token_id=2, layer_norm_eps=1e-5)).save_pretrained(base)
    return base


def modernbert_base(work):
    torch.manual_seed(0)
    base = os.path.join(work, "modernbert-tiny")
    os.makedirs(base)
    tok = modernbert_tokenizer([r["text"] for r in reviews()], os.path.join(base, "tokenizer.json"))
    ModernBertModel(ModernBertConfig(vocab_size=tok.get_vocab_size(), hidden_size=32, num_hidden_layers=3,
                                     num_attention_heads=2, intermediate_size=48, max_position_embeddings=64,
                                     local_attention=8, pad_token_id=0, bos_token_id=1, cls_token_id=1,
                                     eos_token_id=2, sep_token_id=2)).save_pretrained(base)
    return base


def deberta_base(work):
    """A DebertaV2Model of DeBERTa-v3's structure with the fixtures' WordPiece tokenizer."""
    torch.manual_seed(0)
    tokenizer_file = os.path.join(ROOT, "tests/fixtures/data/hf_bert_tokenizer.json")
    base = os.path.join(work, "deberta-tiny")
    DebertaV2Model(DebertaV2Config(vocab_size=Tokenizer.from_file(tokenizer_file).get_vocab_size(), hidden_size=32,
                                   num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                                   max_position_embeddings=64, relative_attention=True, position_buckets=16,
                                   norm_rel_ebd="layer_norm", share_att_key=True, pos_att_type=["p2c", "c2p"],
                                   position_biased_input=False, type_vocab_size=0)).save_pretrained(base)
    shutil.copy(tokenizer_file, os.path.join(base, "tokenizer.json"))
    return base


def main():
    hftrain = sys.argv[1]
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="hftrain-peft-bert-") as work:
        base = make_base(work)
        env = dict(os.environ, HFTRAIN_RECIPES_DIR=os.path.join(ROOT, "recipes"),
                   HFTRAIN_CACHE_DIR=os.path.join(work, "cache"))
        # Evaluated on every review, so that the oracle's loss is over the same rows.
        common = [f"model.from={base}", f"data.train={DATA}", f"data.validation={DATA}", "data.validation_fraction=0",
                  "trainer.device=cpu", "optimizer.lr=1e-2", "scheduler.warmup_steps=5", "peft.method=lora",
                  "peft.lora.r=8", "peft.lora.alpha=16", "peft.lora.target_modules=[all-linear]", "trainer.log_every=1"]
        out = os.path.join(work, "run")
        run(hftrain, "run", "classify-bert", *common, "trainer.max_epochs=8", "trainer.eval_every=40",
            "checkpoint.every_steps=40", "checkpoint.keep_last=0", f"run.output_dir={out}", env=env)
        final = os.path.join(out, "final")
        with open(os.path.join(final, "adapter_config.json"), encoding="utf-8") as f:
            adapter = json.load(f)
        check(adapter.get("task_type") == "SEQ_CLS", f"task_type {adapter.get('task_type')}")
        check(adapter.get("modules_to_save") == ["classifier"], f"modules_to_save {adapter.get('modules_to_save')}")

        # The checkpoint holds what trains: the adapters and the classifier.
        ckpts = sorted((d for d in os.listdir(out) if d.startswith("checkpoint-")), key=lambda d: int(d.split("-")[1]))
        names = []
        for f in os.listdir(os.path.join(out, ckpts[-1])):
            if f.startswith("model") and f.endswith(".safetensors"):
                with safe_open(os.path.join(out, ckpts[-1], f), "pt") as st:
                    names += list(st.keys())
        frozen = [n for n in names if ".lora." not in n and not n.startswith("classifier.")]
        check(names and not frozen, f"the checkpoint holds frozen weights: {frozen[:4]}")

        rows = reviews()
        labels = ["negative", "positive"]  # hftrain's order: sorted label names
        tokenizer = Tokenizer.from_file(os.path.join(final, "tokenizer.json"))
        reported = last_eval(out)
        peft_model = PeftModel.from_pretrained(
            BertForSequenceClassification.from_pretrained(base, num_labels=2, dtype=torch.float32), final).eval()
        loss, accuracy = evaluate(peft_model, tokenizer, rows, labels)
        difference = abs(loss - reported["eval_loss"]) / reported["eval_loss"]
        check(difference <= 1e-5, f"peft's loss {loss} over the reviews, hftrain's eval_loss {reported['eval_loss']}")
        check(abs(accuracy - reported["eval_accuracy"]) < 1e-9,
              f"peft's accuracy {accuracy}, hftrain's eval_accuracy {reported['eval_accuracy']}")
        check(accuracy >= 0.9, f"the adapted classifier reaches only {accuracy} accuracy")
        print(f"peft loads hftrain's BERT adapter: loss over {len(rows)} reviews {loss:.6f}, hftrain's eval_loss "
              f"{reported['eval_loss']:.6f} (relative difference {difference:.1e}); accuracy {accuracy:.3f}")

        merged = os.path.join(work, "merged")
        run(hftrain, "export", final, "--hf", merged, "--merge")
        exported = BertForSequenceClassification.from_pretrained(merged, dtype=torch.float32).eval()
        check(exported.config.id2label == {0: "negative", 1: "positive"}, f"id2label {exported.config.id2label}")
        ids = torch.tensor([tokenizer.encode(rows[0]["text"]).ids])
        with torch.no_grad():
            mdiff = (exported(input_ids=ids).logits - peft_model(input_ids=ids).logits).abs().max().item()
        check(mdiff <= 1e-5, f"the merged export's logits differ from peft's by {mdiff}")
        print(f"merged export in transformers: logits differ from peft's by {mdiff:.1e}")

        # A resume from checkpoint-40 of the run continues it exactly.
        resumed = os.path.join(work, "resumed")
        os.makedirs(resumed)
        shutil.copytree(os.path.join(out, "checkpoint-40"), os.path.join(resumed, "checkpoint-40"))
        run(hftrain, "resume", os.path.join(resumed, "checkpoint-40"), env=env)
        a, b = losses_of(out), losses_of(resumed)
        check(len(b) == len(a) - 40 and a[40:] == b, f"resumed losses {b[:4]}... differ from the run's {a[40:44]}...")
        print(f"resume from checkpoint-40: {len(b)} steps, equal to the uninterrupted run's: {a[40:] == b}")

        # 2 ranks x 8 sequences under zero2 against 1 rank x 2 micro-batches of 8, on a base without
        # dropout (each rank draws its own dropout masks).
        still = make_base(work, dropout=0.0)
        short = [*common, f"model.from={still}", "trainer.max_steps=12", "trainer.eval_every=0", "checkpoint.at_end=false"]
        one = os.path.join(work, "one")
        run(hftrain, "run", "classify-bert", *short, "trainer.micro_batch_size=8", "trainer.grad_accum_steps=2",
            f"run.output_dir={one}", env=env)
        two = os.path.join(work, "two")
        run(hftrain, "run", "classify-bert", *short, "trainer.micro_batch_size=8", "distributed.strategy=zero2",
            f"run.output_dir={two}", "--nproc-per-node", "2", env=env)
        worst = largest_relative_difference(losses_of(one), losses_of(two))
        check(worst <= 1e-5, f"2 ranks under zero2: losses {losses_of(two)}, 1 rank {losses_of(one)}")
        print(f"2 ranks under zero2 against 1 rank: largest relative loss difference {worst:.1e}")

        adapter_agrees(hftrain, work, env, "roberta-lora", roberta_base(work), RobertaForSequenceClassification,
                       common)
        # ModernBERT: its head (head.dense, head.norm), new on a ModernBertModel base, trains in full
        # beside the classifier and is saved with it.
        adapter_agrees(hftrain, work, env, "modernbert-lora", modernbert_base(work),
                       ModernBertForSequenceClassification, common, saved=("classifier", "head"))
        # DeBERTa-v3: its pooler (pooler.dense), new on a DebertaV2Model base, likewise.
        adapter_agrees(hftrain, work, env, "deberta-lora", deberta_base(work), DebertaV2ForSequenceClassification,
                       common, saved=("classifier", "pooler"))
    return finish("ok: LoRA on BERT, RoBERTa, ModernBERT and DeBERTa classifiers loads in peft with hftrain's loss, "
                  "merges, resumes exactly")


if __name__ == "__main__":
    sys.exit(main())
