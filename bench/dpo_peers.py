"""A DPO step of hftrain next to TRL's DPOTrainer on the same base, pairs, batch and optimizer (CPU).

    bench/dpo_peers.sh [--steps 12] [--pairs 8] [--threads N] [--layers 4] [--width 256]

Writes a Llama base (transformers' save_pretrained, the SentencePiece-style BPE tokenizer of
tests/fixtures, which adds a BOS) and 96 text pairs whose answers run to about 100 tokens, then trains
each for --steps steps of --pairs pairs (fp32, AdamW, constant learning rate, dropout off, no
gradient checkpointing) in its own process with --threads threads. Prints one table: the mean step
time after the first two steps, the pairs and tokens (the 2B rows padded to the longest, as both pad)
per second, and each process's own peak resident memory; then the ratio. Both score the same tokens: TRL's
reference is a second copy of the base, hftrain's a frozen copy of the starting weights. Then both again
with the reference's log-probs computed before training (hftrain's preference.reference=precomputed,
TRL's precompute_ref_log_probs): no reference model in memory, the peak memory the copy costs shows.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOKENIZER = os.path.join(ROOT, "tests", "fixtures", "data", "hf_llama2_tokenizer.json")
WORDS = ("the cat sat on a mat and then the dog ran to the park where children played with a red ball "
         "while an old man read his paper near the quiet pond full of fish").split()


def pairs(n):
    rng = random.Random(0)
    out = []
    for i in range(n):
        prompt = f"Question {i}: tell me about " + " ".join(rng.choice(WORDS) for _ in range(8)) + "."
        answer = lambda: " " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(60, 90))) + "."  # noqa: E731
        out.append({"prompt": prompt, "chosen": answer(), "rejected": answer()})
    return out


def write_base(work, layers, width):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
    torch.manual_seed(0)
    tok = PreTrainedTokenizerFast(tokenizer_file=TOKENIZER, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
                                  pad_token="<unk>")
    model = LlamaForCausalLM(LlamaConfig(vocab_size=959, hidden_size=width, intermediate_size=width * 8 // 3,
                                         num_hidden_layers=layers, num_attention_heads=width // 64,
                                         num_key_value_heads=max(1, width // 128), max_position_embeddings=512,
                                         tie_word_embeddings=False))
    base = os.path.join(work, "base")
    model.save_pretrained(base)
    tok.save_pretrained(base)
    return base


def trl_child(base, data, steps, batch, out, precompute):
    """Runs in the child process: TRL's DPOTrainer; writes the step end times."""
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast, TrainerCallback
    from trl import DPOConfig, DPOTrainer
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    times = []

    class Clock(TrainerCallback):
        def on_step_end(self, args, state, control, **kw):
            times.append(time.perf_counter())

    args = DPOConfig(output_dir=os.path.join(os.path.dirname(out), "trl"), per_device_train_batch_size=batch,
                     max_steps=steps, learning_rate=1e-4, lr_scheduler_type="constant", logging_steps=steps,
                     bf16=False, fp16=False, use_cpu=True, report_to=[], save_strategy="no", seed=0, max_length=512,
                     gradient_checkpointing=False, disable_dropout=True, dataloader_num_workers=0,
                     precompute_ref_log_probs=precompute)
    trainer = DPOTrainer(model=AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32), args=args,
                         train_dataset=Dataset.from_list([json.loads(line) for line in open(data)]),
                         processing_class=PreTrainedTokenizerFast.from_pretrained(base), callbacks=[Clock()])
    trainer.train()
    json.dump(times, open(out, "w"))


def run_measured(cmd, env):
    """Runs `cmd`; its own peak resident memory in MiB (os.wait4's rusage of that child alone)."""
    child = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{cmd[0]} failed: {child.stderr.read().decode()[-2000:]}")
    return usage.ru_maxrss / 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hftrain", default=os.path.join(ROOT, "build", "apps", "hftrain", "hftrain"))
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--pairs", type=int, default=8)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--trl-child", nargs=5, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.trl_child:
        base, data, out, steps, precompute = a.trl_child
        return trl_child(base, data, int(steps), a.pairs, out, precompute == "1")
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads), HFTRAIN_RECIPES_DIR=os.path.join(ROOT, "recipes"))
    with tempfile.TemporaryDirectory() as work:
        base = write_base(work, a.layers, a.width)
        data = os.path.join(work, "pairs.jsonl")
        with open(data, "w") as f:
            for p in pairs(96):
                f.write(json.dumps(p) + "\n")
        rows = []
        for precompute in (False, True):
            # hftrain: step times from metrics.jsonl (step_time_ms), tokens from tokens_seen.
            run_dir = os.path.join(work, f"hftrain-{precompute}")
            reference = "precomputed" if precompute else "copy"
            mem = run_measured([a.hftrain, "run", "finetune-hf", f"model.from={base}", f"data.train=[{data}]",
                                "data.seq_len=512", "data.validation_fraction=0", "run.export_hf=false",
                                "preference.objective=dpo", f"preference.reference={reference}",
                                f"data.cache_dir={work}/cache", "optimizer.name=adamw", "optimizer.lr=1e-4",
                                "optimizer.weight_decay=0", "scheduler.name=constant", "scheduler.warmup_steps=0",
                                f"trainer.max_steps={a.steps}", f"trainer.micro_batch_size={a.pairs}",
                                "trainer.log_every=1", "trainer.eval_every=0", "trainer.precision=fp32",
                                "trainer.device=cpu", "model.dropout=0", "checkpoint.every_steps=0",
                                "checkpoint.at_end=false", f"run.output_dir={run_dir}"], env)
            records = [json.loads(line) for line in open(os.path.join(run_dir, "metrics.jsonl"))]
            train = [r for r in records if r.get("type") == "train"]
            tokens = (train[-1]["tokens_seen"] - train[1]["tokens_seen"]) / (len(train) - 2)
            step_s = sum(r["step_time_ms"] for r in train[2:]) / 1000 / (len(train) - 2)
            rows.append((f"hftrain {reference}", step_s, tokens, mem))
            # TRL, in a child of its own (its peak memory apart from hftrain's).
            times_file = os.path.join(work, "trl-times.json")
            trl_mem = run_measured([a.python, os.path.abspath(__file__), "--pairs", str(a.pairs), "--trl-child", base,
                                    data, times_file, str(a.steps), "1" if precompute else "0"], env)
            times = json.load(open(times_file))
            trl_step = (times[-1] - times[1]) / (len(times) - 2)
            rows.append((f"trl {reference}", trl_step, tokens, trl_mem))
    print(f"DPO step on the CPU ({a.threads} threads): Llama {a.layers} x {a.width}, {a.pairs} pairs a step, "
          f"{tokens:.0f} tokens a step, fp32")
    print(f"{'':20} {'step (s)':>10} {'pairs/s':>9} {'tokens/s':>10} {'peak RSS (MiB)':>15}")
    for name, step, tok, mem in rows:
        print(f"{name:20} {step:10.3f} {a.pairs / step:9.1f} {tok / step:10.0f} {mem:15.0f}")
    print(f"hftrain / trl: {rows[1][1] / rows[0][1]:.2f}x the steps per second with a reference copy, "
          f"{rows[3][1] / rows[2][1]:.2f}x with it precomputed; the copy's peak memory: hftrain "
          f"{rows[0][3] - rows[2][3]:.0f} MiB, trl {rows[1][3] - rows[3][3]:.0f} MiB")


if __name__ == "__main__":
    sys.exit(main())
