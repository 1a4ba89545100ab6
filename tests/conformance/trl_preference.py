"""Preference training against TRL's own trainers (trl 1.16).

    .venv/bin/python tests/conformance/trl_preference.py path/to/hftrain

For a GPT-2 and a Llama base written by transformers' save_pretrained (with a byte-level BPE
tokenizer, tests/fixtures/data/hf_bpe_tokenizer.json), the same text pairs in one full batch, fp32 on
the CPU, dropout off, AdamW at a constant learning rate for a few steps: `hftrain run` with
preference.objective=dpo gives TRL's DPOTrainer's loss and metrics (rewards/chosen, rewards/rejected,
rewards/margins, rewards/accuracies, logps/chosen, logps/rejected) at every step within 1e-5 (relative,
or absolute below 1), for the loss types sigmoid, hinge, ipo and robust. TRL's reference is a second
copy of the base; hftrain's a frozen copy of its starting weights. The same for the reference-free
objectives: preference.objective=simpo against TRL's CPOTrainer with loss_type="simpo" (cpo_alpha 0,
and 1 with the chosen answers' cross-entropy), and orpo against its ORPOTrainer (with nll_loss,
log_odds_ratio and log_odds_chosen). And the conversational form: the same pairs as message lists,
rendered through the tokenizer's chat template (tokenizer_config.json's, data.chat_template=auto), give
TRL's DPO loss and metrics too, so both encode the same ids. And preference.reference=precomputed (the
reference's log-probs computed before training, no reference model) gives DPOTrainer's with
precompute_ref_log_probs. With LoRA (both continuing the same random peft adapter), the reference is the
base with the adapters off on both sides and the metrics agree at every step. And a tokenizer whose
post-processor adds a BOS (the SentencePiece-style Llama fixture) gives TRL's ids. Exits 1 on any
difference.
"""
import json
import math
import os
import sys
import tempfile

import torch
from datasets import Dataset
from peft import LoraConfig, PeftModel, get_peft_model
from transformers import (AutoModelForCausalLM, GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM,
                          PreTrainedTokenizerFast)
from trl import DPOConfig, DPOTrainer
from trl.experimental.cpo import CPOConfig, CPOTrainer
from trl.experimental.orpo import ORPOConfig, ORPOTrainer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peft_common import check, finish, run  # noqa: E402

TOKENIZER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "data",
                         "hf_bpe_tokenizer.json")
LLAMA2_TOKENIZER = os.path.join(os.path.dirname(TOKENIZER), "hf_llama2_tokenizer.json")
PAIRS = [
    {"prompt": "The cat sat on", "chosen": " the mat.", "rejected": " a hat, then ran away."},
    {"prompt": "Two plus two is", "chosen": " four.", "rejected": " five, or so I heard."},
    {"prompt": "Spell cat backwards:", "chosen": " tac", "rejected": " cta"},
    {"prompt": "The sky is", "chosen": " blue today.", "rejected": " made of cheese."},
    {"prompt": "Water boils at", "chosen": " 100 degrees.", "rejected": " 12 degrees."},
    {"prompt": "A stitch in time", "chosen": " saves nine.", "rejected": " saves ten thousand."},
    {"prompt": "Hello,", "chosen": " how are you?", "rejected": " go away."},
    {"prompt": "The capital of France is", "chosen": " Paris.", "rejected": " Berlin, surely."},
]
# A plain template (role: content lines; the generation prompt "assistant:"), kept in tokenizer_config.json.
CHAT_TEMPLATE = ("{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
                 "{% if add_generation_prompt %}assistant:{% endif %}")
CONVERSATIONS = [{"prompt": [{"role": "user", "content": p["prompt"]}],
                  "chosen": [{"role": "assistant", "content": p["chosen"].strip()}],
                  "rejected": [{"role": "assistant", "content": p["rejected"].strip()}]} for p in PAIRS]
METRICS = ["loss", "rewards/chosen", "rewards/rejected", "rewards/margins", "rewards/accuracies", "logps/chosen",
           "logps/rejected"]
STEPS = 3
LR = 1e-3


def bases(work):
    torch.manual_seed(0)
    tokenizer = PreTrainedTokenizerFast(tokenizer_file=TOKENIZER, eos_token="<|endoftext|>", pad_token="<|pad|>")
    llama = LlamaForCausalLM(LlamaConfig(vocab_size=420, hidden_size=48, intermediate_size=72, num_hidden_layers=2,
                                         num_attention_heads=6, num_key_value_heads=2, max_position_embeddings=128,
                                         rope_theta=10000.0, tie_word_embeddings=False, rms_norm_eps=1e-5))
    gpt2 = GPT2LMHeadModel(GPT2Config(vocab_size=420, n_embd=48, n_layer=2, n_head=4, n_positions=128,
                                      resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0))
    out = {}
    for name, model in (("gpt2", gpt2), ("llama", llama)):
        d = os.path.join(work, "base-" + name)
        model.save_pretrained(d)
        tokenizer.chat_template = CHAT_TEMPLATE
        tokenizer.save_pretrained(d)
        out[name] = d
    return out


# The cases: a name, TRL's trainer and config keywords, hftrain's preference.* overrides, the metrics compared.
ORPO_METRICS = METRICS + ["nll_loss", "log_odds_ratio", "log_odds_chosen"]
CASES = [(f"dpo {t}", DPOTrainer, DPOConfig, {"beta": 0.1, "loss_type": [t], "label_smoothing": eps},
          ["preference.objective=dpo", f"preference.loss_type={t}", "preference.beta=0.1",
           f"preference.label_smoothing={eps}"], METRICS)
         for t, eps in (("sigmoid", 0.0), ("hinge", 0.0), ("ipo", 0.0), ("robust", 0.1))]
# The reference's log-probs computed before training: TRL's precompute_ref_log_probs, hftrain's
# preference.reference=precomputed (so also equal to the frozen-copy runs above).
CASES += [("dpo sigmoid precomputed", DPOTrainer, DPOConfig,
           {"beta": 0.1, "loss_type": ["sigmoid"], "precompute_ref_log_probs": True},
           ["preference.objective=dpo", "preference.loss_type=sigmoid", "preference.beta=0.1",
            "preference.reference=precomputed", "data.cache_dir={work}/cache"],
           METRICS)]
CASES += [(f"simpo cpo_alpha={a}", CPOTrainer, CPOConfig,
           {"beta": 2.0, "loss_type": "simpo", "simpo_gamma": 0.5, "cpo_alpha": a, "label_smoothing": 0.0},
           ["preference.objective=simpo", "preference.beta=2.0", "preference.gamma=0.5", f"preference.cpo_alpha={a}"],
           METRICS) for a in (0.0, 1.0)]
CASES += [("orpo", ORPOTrainer, ORPOConfig, {"beta": 0.1}, ["preference.objective=orpo", "preference.beta=0.1"],
           ORPO_METRICS)]


def lora_adapter(base, work):
    """A peft LoRA adapter on `base` whose A and B are both random (not a zero B): the policy differs
    from the base from the first step, and the base with the adapters off is the reference."""
    torch.manual_seed(1)
    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    adapter = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"],
                                               lora_dropout=0.0, init_lora_weights=False, task_type="CAUSAL_LM"))
    out = os.path.join(work, "adapter-" + os.path.basename(base))
    adapter.save_pretrained(out)
    return out


def bos_base(work):
    """A Llama base with the SentencePiece-style tokenizer of tests/fixtures, whose post-processor adds a BOS."""
    torch.manual_seed(2)
    tokenizer = PreTrainedTokenizerFast(tokenizer_file=LLAMA2_TOKENIZER, bos_token="<s>", eos_token="</s>",
                                        unk_token="<unk>", pad_token="<unk>")
    model = LlamaForCausalLM(LlamaConfig(vocab_size=959, hidden_size=48, intermediate_size=72, num_hidden_layers=2,
                                         num_attention_heads=6, num_key_value_heads=2, max_position_embeddings=128,
                                         rope_theta=10000.0, tie_word_embeddings=False, rms_norm_eps=1e-5))
    out = os.path.join(work, "base-llama-bos")
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def trl_args(work, batch):
    """What every conformance run gives TRL's config: one full batch, fp32 on the CPU, AdamW at a constant rate."""
    return dict(output_dir=os.path.join(work, "trl-out"), per_device_train_batch_size=batch, max_steps=STEPS,
                learning_rate=LR, lr_scheduler_type="constant", weight_decay=0.0, adam_beta1=0.9, adam_beta2=0.999,
                adam_epsilon=1e-8, max_grad_norm=1.0, logging_steps=1, bf16=False, fp16=False, use_cpu=True,
                report_to=[], save_strategy="no", seed=0, max_length=64, gradient_checkpointing=False,
                disable_dropout=True)


def hftrain_args(out, batch):
    """hftrain's overrides for the same run (trl_args), its run directory `out`."""
    return ["data.seq_len=64", "data.shuffle=false", "optimizer.name=adamw", f"optimizer.lr={LR}",
            "optimizer.weight_decay=0", "optimizer.beta1=0.9", "optimizer.beta2=0.999", "optimizer.eps=1e-8",
            "scheduler.name=constant", "scheduler.warmup_steps=0", f"trainer.max_steps={STEPS}",
            f"trainer.micro_batch_size={batch}", "trainer.grad_accum_steps=1", "trainer.max_grad_norm=1.0",
            "trainer.log_every=1", "trainer.precision=fp32", "trainer.device=cpu", "model.dropout=0",
            "checkpoint.every_steps=0", "checkpoint.at_end=false", f"run.output_dir={out}"]


def logged(out, metrics, kind="train"):
    """A run's metrics.jsonl records of `kind` by step, with the `metrics` they hold."""
    by_step = {}
    with open(os.path.join(out, "metrics.jsonl"), encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            if r.get("type") == kind:
                by_step[r["step"]] = {k: r[k] for k in metrics if k in r}
    return by_step


def compare(name, theirs, ours, steps, metrics):
    """Checks each metric at each step within 1e-5 (close); returns the largest relative difference."""
    worst = 0.0
    for step in steps:
        for key in metrics:
            a, b = theirs.get(step, {}).get(key), ours.get(step, {}).get(key)
            if a is None or b is None:
                check(False, f"{name}: step {step} has no {key} (TRL {a}, hftrain {b})")
                continue
            worst = max(worst, abs(a - b) / max(1.0, abs(a)))
            check(close(a, b), f"{name}: step {step} {key}: TRL {a}, hftrain {b}")
    return worst


def trl_metrics(base, work, trainer_class, config_class, options, metrics, records=PAIRS):
    options = dict(options)
    adapter = options.pop("_adapter", None)
    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    if adapter:  # TRL's reference is then the same model with its adapters off
        model = PeftModel.from_pretrained(model, adapter, is_trainable=True)
    tokenizer = PreTrainedTokenizerFast.from_pretrained(base)
    args = config_class(**trl_args(work, len(PAIRS)), **options)
    trainer = trainer_class(model=model, args=args, train_dataset=Dataset.from_list(records),
                            processing_class=tokenizer)
    trainer.train()
    steps = [r for r in trainer.state.log_history if "loss" in r and "step" in r]
    return {r["step"]: {k: r[k] for k in metrics if k in r} for r in steps}


def hftrain_metrics(hftrain, base, work, name, overrides, metrics, records=PAIRS):
    pairs = os.path.join(work, "pairs.jsonl")
    with open(pairs, "w", encoding="utf-8") as f:
        for p in records:
            f.write(json.dumps(p) + "\n")
    out = os.path.join(work, "hftrain-" + name.replace(" ", "-").replace("=", ""))
    run(hftrain, "run", "finetune-hf", f"model.from={base}", f"data.train=[{pairs}]", "data.validation_fraction=0",
        "data.chat_template=auto", "run.export_hf=false", "trainer.eval_every=0", *hftrain_args(out, len(PAIRS)),
        *[o.replace("{work}", work) for o in overrides])
    return logged(out, metrics)


def close(a, b):
    return abs(a - b) <= 1e-5 * max(1.0, abs(a))


def main():
    hftrain = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as work:
        cases = [(m, *c, PAIRS) for m in bases(work).items() for c in CASES]
        cases.append((("gpt2", os.path.join(work, "base-gpt2")), "dpo sigmoid conversational", *CASES[0][1:],
                      CONVERSATIONS))
        # LoRA: both continue the same random adapter; the reference is the base with the adapters off.
        llama = os.path.join(work, "base-llama")
        adapter = lora_adapter(llama, work)
        cases.append((("llama", llama), "dpo sigmoid lora adapters off", DPOTrainer, DPOConfig,
                      {"beta": 0.1, "loss_type": ["sigmoid"], "_adapter": adapter},
                      ["preference.objective=dpo", "preference.beta=0.1", "peft.method=lora", f"peft.from={adapter}",
                       "peft.lora.r=4", "peft.lora.alpha=8", "peft.lora.dropout=0",
                       "peft.lora.target_modules=[q_proj,v_proj]", "preference.reference=adapters_off"],
                      METRICS, PAIRS))
        # A tokenizer that adds a BOS (its post-processor): the prompt starts with it on both sides.
        cases.append((("llama-bos", bos_base(work)), "dpo sigmoid", *CASES[0][1:], PAIRS))
        for (model_name, base), case, trainer_class, config_class, options, overrides, metrics, records in cases:
            name = f"{model_name} {case}"
            theirs = trl_metrics(base, work, trainer_class, config_class, options, metrics, records)
            ours = hftrain_metrics(hftrain, base, work, name, overrides, metrics, records)
            worst = compare(name, theirs, ours, range(1, STEPS + 1), metrics)
            print(f"{name}: {STEPS} steps, largest difference from TRL {worst:.1e} "
                  f"(step 1 loss {ours.get(1, {}).get('loss')})")
            check(math.isfinite(worst), f"{name}: no comparison")
    return finish("preference training equals TRL's DPOTrainer, CPOTrainer (SimPO) and ORPOTrainer")


if __name__ == "__main__":
    sys.exit(main())
