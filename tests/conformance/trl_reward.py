"""Reward models against TRL's RewardTrainer (trl 1.16).

    .venv/bin/python tests/conformance/trl_reward.py path/to/hftrain

For a GPT-2 and a Llama reward model written by transformers (*ForSequenceClassification with
num_labels=1, the same score head on both sides), the preference pairs of trl_preference.py in one full
batch, fp32 on the CPU, dropout off, AdamW at a constant learning rate for a few steps:
`hftrain run` with preference.objective=reward gives RewardTrainer's loss, accuracy, margin and
mean_reward at every step within 1e-5 (relative, or absolute below 1), also with a margin column and
center_rewards_coefficient, with a tokenizer without a padding token (the EOS pads, and the score is
read at the token before it), and with LoRA (both continuing the same random peft SEQ_CLS adapter; peft
loads hftrain's adapter on the base with the export's scores). Then hftrain's export (run.export_hf) loads with
AutoModelForSequenceClassification, its scores of the pairs equal those of TRL's trained model, and
hftrain's own evaluation of the pairs after the last step (eval_accuracy, eval_margin, eval_mean_reward)
equals what those scores give. Exits 1 on any difference.
"""
import json
import os
import sys
import tempfile

import torch
from datasets import Dataset
from transformers import (AutoModelForSequenceClassification, GPT2Config, GPT2ForSequenceClassification, LlamaConfig,
                          LlamaForSequenceClassification, PreTrainedTokenizerFast)
from peft import LoraConfig, PeftModel, get_peft_model
from trl import RewardConfig, RewardTrainer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peft_common import check, finish, run  # noqa: E402
from trl_preference import PAIRS, STEPS, TOKENIZER, compare, hftrain_args, logged, trl_args  # noqa: E402

METRICS = ["loss", "accuracy", "margin", "mean_reward"]
MARGINS = [0.5, 0.0, 1.0, 0.25, 0.0, 2.0, 0.1, 0.75]


def bases(work):
    """Reward models as transformers makes them: a decoder's body and a one-output score head."""
    torch.manual_seed(0)
    tokenizer = PreTrainedTokenizerFast(tokenizer_file=TOKENIZER, eos_token="<|endoftext|>", pad_token="<|pad|>")
    pad = tokenizer.pad_token_id
    llama = LlamaForSequenceClassification(LlamaConfig(
        vocab_size=420, hidden_size=48, intermediate_size=72, num_hidden_layers=2, num_attention_heads=6,
        num_key_value_heads=2, max_position_embeddings=128, rope_theta=10000.0, tie_word_embeddings=False,
        rms_norm_eps=1e-5, num_labels=1, pad_token_id=pad))
    gpt2 = GPT2ForSequenceClassification(GPT2Config(
        vocab_size=420, n_embd=48, n_layer=2, n_head=4, n_positions=128, resid_pdrop=0.0, embd_pdrop=0.0,
        attn_pdrop=0.0, num_labels=1, pad_token_id=pad))
    out = {}
    for name, model in (("gpt2", gpt2), ("llama", llama)):
        d = os.path.join(work, "reward-" + name)
        model.save_pretrained(d)
        tokenizer.save_pretrained(d)
        out[name] = d
    # GPT-2's own way: no padding token, so the EOS pads and the score is read at the token before it.
    d = os.path.join(work, "reward-gpt2-eos-padding")
    no_pad = PreTrainedTokenizerFast(tokenizer_file=TOKENIZER, eos_token="<|endoftext|>")
    gpt2.config.pad_token_id = no_pad.eos_token_id
    gpt2.save_pretrained(d)
    no_pad.save_pretrained(d)
    out["gpt2-eos-padding"] = d
    return out


def lora_adapter(base, work):
    """A peft SEQ_CLS adapter on the reward model `base` with random A and B (the score trained in full)."""
    torch.manual_seed(3)
    model = AutoModelForSequenceClassification.from_pretrained(base, num_labels=1, dtype=torch.float32)
    adapter = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"],
                                               lora_dropout=0.0, init_lora_weights=False, task_type="SEQ_CLS",
                                               modules_to_save=["score"]))
    out = os.path.join(work, "adapter-" + os.path.basename(base))
    adapter.save_pretrained(out)
    return out


def trl_run(base, work, records, center, adapter=None):
    model = AutoModelForSequenceClassification.from_pretrained(base, num_labels=1, dtype=torch.float32)
    if adapter:
        model = PeftModel.from_pretrained(model, adapter, is_trainable=True)
    tokenizer = PreTrainedTokenizerFast.from_pretrained(base)
    args = RewardConfig(**trl_args(work, len(records)), center_rewards_coefficient=center)
    trainer = RewardTrainer(model=model, args=args, train_dataset=Dataset.from_list(records),
                            processing_class=tokenizer)
    trainer.train()
    steps = [r for r in trainer.state.log_history if "loss" in r and "step" in r]
    return {r["step"]: {k: r[k] for k in METRICS if k in r} for r in steps}, trainer.model.eval(), tokenizer


def hftrain_run(hftrain, base, work, name, records, center, overrides=()):
    pairs = os.path.join(work, name + ".jsonl")
    with open(pairs, "w", encoding="utf-8") as f:
        for p in records:
            f.write(json.dumps(p) + "\n")
    out = os.path.join(work, "hftrain-" + name)
    run(hftrain, "run", "finetune-hf", f"model.from={base}", f"data.train=[{pairs}]", f"data.validation=[{pairs}]",
        "run.export_hf=true", "preference.objective=reward", f"preference.center_coefficient={center or 0}",
        f"trainer.eval_every={STEPS}", *hftrain_args(out, len(records)), *overrides)
    evaluation = logged(out, ["eval_" + m for m in METRICS], "eval").get(STEPS, {})
    return logged(out, METRICS), {k[len("eval_"):]: v for k, v in evaluation.items()}, os.path.join(out, "final-hf")


def scores(model, tokenizer, records):
    """Each pair's chosen and rejected scores as transformers computes them (prompt + answer + EOS)."""
    out = []
    with torch.no_grad():
        for p in records:
            row = []
            for answer in ("chosen", "rejected"):
                ids = tokenizer(p["prompt"] + p[answer] + tokenizer.eos_token, return_tensors="pt")["input_ids"]
                row.append(model(input_ids=ids).logits[0, 0].item())
            out.append(row)
    return out


def main():
    hftrain = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as work:
        with_margins = [dict(p, margin=m) for p, m in zip(PAIRS, MARGINS)]
        cases = [(m, b, "plain", PAIRS, None, None) for m, b in bases(work).items()]
        llama = os.path.join(work, "reward-llama")
        cases.append(("llama", llama, "margin-centred", with_margins, 0.01, None))
        # LoRA: both continue the same random SEQ_CLS adapter, the score head trained in full.
        cases.append(("llama", llama, "lora", PAIRS, None, lora_adapter(llama, work)))
        for model_name, base, case, records, center, adapter in cases:
            name = f"{model_name}-{case}"
            theirs, trained, tokenizer = trl_run(base, work, records, center, adapter)
            # TRL pads with the tokenizer's padding token or its EOS; hftrain would take the fixture's
            # well-known <|pad|> where tokenizer_config.json names none: the EOS is named instead.
            overrides = ["tokenizer.pad_token=<|endoftext|>"] if "eos-padding" in model_name else []
            if adapter:
                overrides += ["peft.method=lora", f"peft.from={adapter}", "peft.lora.r=4", "peft.lora.alpha=8",
                              "peft.lora.dropout=0", "peft.lora.target_modules=[q_proj,v_proj]",
                              "peft.modules_to_save=[score]"]
            ours, evaluation, export = hftrain_run(hftrain, base, work, name, records, center, overrides)
            worst = compare(name, theirs, ours, range(1, STEPS + 1), METRICS)
            # The export: transformers loads it, and it scores the pairs as TRL's trained model does.
            exported = AutoModelForSequenceClassification.from_pretrained(export, dtype=torch.float32).eval()
            check(exported.config.num_labels == 1, f"{name}: the export has num_labels {exported.config.num_labels}")
            a, b = scores(trained, tokenizer, records), scores(exported, tokenizer, records)
            score_diff = max(abs(x - y) for ra, rb in zip(a, b) for x, y in zip(ra, rb))
            check(score_diff <= 1e-5, f"{name}: the export's scores differ from TRL's trained model's by {score_diff}")
            if adapter:  # peft loads hftrain's adapter (its final/) on the base, with the same scores
                tuned = PeftModel.from_pretrained(
                    AutoModelForSequenceClassification.from_pretrained(base, num_labels=1, dtype=torch.float32),
                    os.path.join(os.path.dirname(export), "final")).eval()
                peft_diff = max(abs(x - y) for ra, rb in zip(scores(tuned, tokenizer, records), b)
                                for x, y in zip(ra, rb))
                check(peft_diff <= 1e-5, f"{name}: peft's load of the adapter scores {peft_diff} off the export")
            # hftrain's evaluation after the last step is what the export's scores give.
            want = {"accuracy": sum(c > r for c, r in b) / len(b), "margin": sum(c - r for c, r in b) / len(b),
                    "mean_reward": sum(c + r for c, r in b) / (2 * len(b))}
            eval_diff = compare(name + " evaluation", {0: want}, {0: evaluation}, [0], list(want))
            print(f"{name}: {STEPS} steps, largest difference from TRL {worst:.1e}; export's scores vs TRL's "
                  f"{score_diff:.1e}; hftrain's evaluation vs the export's scores {eval_diff:.1e}")
    return finish("reward models equal TRL's RewardTrainer, and their exports load in transformers with those scores")


if __name__ == "__main__":
    sys.exit(main())
