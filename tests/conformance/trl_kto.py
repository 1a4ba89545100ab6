"""KTO against TRL's KTOTrainer (trl 1.16).

    .venv/bin/python tests/conformance/trl_kto.py path/to/hftrain

For the GPT-2 and Llama bases of trl_preference.py, unpaired examples made from its pairs (each chosen
answer desirable, each rejected one not) in one full batch without shuffling, fp32 on the CPU, dropout
off, AdamW at a constant learning rate for a few steps: `hftrain run` with preference.objective=kto
gives KTOTrainer's loss and metrics (rewards/chosen, rewards/rejected, rewards/margins, logps/chosen,
logps/rejected, kl) at every step within 1e-5 (relative, or absolute below 1): both build the KL rows by
pairing each prompt with the previous example's completion, and both use a frozen copy of the base as
the reference. Also with fewer undesirable examples than desirable ones and class weights, and with
paired records on the lines (hftrain unpairs them as it reads). Exits 1 on any difference.
"""
import json
import os
import sys
import tempfile

import torch
from datasets import Dataset
from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast
from trl import KTOConfig, KTOTrainer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peft_common import finish, run  # noqa: E402
from trl_preference import PAIRS, STEPS, bases, compare, hftrain_args, logged, trl_args  # noqa: E402

METRICS = ["loss", "rewards/chosen", "rewards/rejected", "rewards/margins", "logps/chosen", "logps/rejected", "kl"]
UNPAIRED = [row for p in PAIRS for row in ({"prompt": p["prompt"], "completion": p["chosen"], "label": True},
                                           {"prompt": p["prompt"], "completion": p["rejected"], "label": False})]
# Fewer undesirable examples: every other pair's rejected answer left out.
UNBALANCED = [r for i, r in enumerate(UNPAIRED) if r["label"] or i % 4 != 1]


def trl_run(base, work, records, options):
    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    tokenizer = PreTrainedTokenizerFast.from_pretrained(base)
    args = KTOConfig(**trl_args(work, len(records)), **options)
    trainer = KTOTrainer(model=model, args=args, train_dataset=Dataset.from_list(records), processing_class=tokenizer)
    trainer.train()
    steps = [r for r in trainer.state.log_history if "loss" in r and "step" in r]
    return {r["step"]: {k: r[k] for k in METRICS if k in r} for r in steps}


def hftrain_run(hftrain, base, work, name, records, overrides):
    data = os.path.join(work, name + ".jsonl")
    with open(data, "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
    examples = sum(2 if "chosen" in r else 1 for r in records)
    out = os.path.join(work, "hftrain-" + name)
    run(hftrain, "run", "finetune-hf", f"model.from={base}", f"data.train=[{data}]", "data.validation_fraction=0",
        "run.export_hf=false", "preference.objective=kto", "trainer.eval_every=0", *hftrain_args(out, examples),
        *overrides)
    return logged(out, METRICS)


def main():
    hftrain = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as work:
        # (name, base, TRL's records, TRL's options, hftrain's records, hftrain's overrides)
        cases = [(f"{m} kto", b, UNPAIRED, {"beta": 0.1}, UNPAIRED, ["preference.beta=0.1"])
                 for m, b in bases(work).items()]
        llama = os.path.join(work, "base-llama")
        cases.append(("llama kto unbalanced weighted", llama, UNBALANCED,
                      {"beta": 0.2, "desirable_weight": 1.0, "undesirable_weight": 1.6}, UNBALANCED,
                      ["preference.beta=0.2", "preference.undesirable_weight=1.6"]))
        # Paired records on the lines: hftrain reads each as its chosen answer (desirable), then its rejected one.
        cases.append(("gpt2 kto from pairs", os.path.join(work, "base-gpt2"), UNPAIRED, {"beta": 0.1}, PAIRS,
                      ["preference.beta=0.1"]))
        for name, base, theirs_records, options, our_records, overrides in cases:
            theirs = trl_run(base, work, theirs_records, options)
            ours = hftrain_run(hftrain, base, work, name.replace(" ", "-"), our_records, overrides)
            worst = compare(name, theirs, ours, range(1, STEPS + 1), METRICS)
            print(f"{name}: {STEPS} steps, largest difference from TRL {worst:.1e} "
                  f"(step 1 loss {ours.get(1, {}).get('loss')}, kl at step 3 {ours.get(3, {}).get('kl')})")
    return finish("KTO equals TRL's KTOTrainer")


if __name__ == "__main__":
    sys.exit(main())
