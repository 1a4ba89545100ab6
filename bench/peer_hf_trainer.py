"""A peer for bench/peers.py: the Hugging Face Trainer training transformers' own model class
(GPT2LMHeadModel or LlamaForCausalLM) from the same directory hftrain's model.from reads, on the
same token shard cut into the same blocks, with TrainingArguments set to match hftrain's run:
micro-batch, AdamW (adamw_torch_fused, betas 0.9/0.95, weight decay 0.1), global-norm clipping at
1.0, a cosine schedule with linear warmup, no evaluation, no saving, no dropout.

Prints one JSON line: tokens/s over the timed steps, every timed step's seconds (a callback stamps
each optimizer step), when the first step began, and the last loss. Needs torch and transformers.
"""
import argparse
import json
import os
import tempfile
import time

import torch
from torch.utils.data import Dataset
from transformers import AutoModelForCausalLM, Trainer, TrainerCallback, TrainingArguments


class Blocks(Dataset):
    """Consecutive blocks of seq+1 tokens; the model shifts the labels itself, so a block of seq
    inputs gives seq-1 targets, as close to hftrain's seq targets as the Trainer allows."""

    def __init__(self, tokens, seq):
        self.tokens, self.seq = tokens, seq
        self.count = (tokens.numel() - 1) // (seq + 1)

    def __len__(self):
        return self.count

    def __getitem__(self, i):
        block = self.tokens[i * (self.seq + 1):i * (self.seq + 1) + self.seq]
        return {"input_ids": block, "labels": block}


class StepClock(TrainerCallback):
    def __init__(self):
        self.begins, self.ends = [], []

    def on_step_begin(self, args, state, control, **kwargs):
        self.begins.append((time.time(), time.perf_counter()))

    def on_step_end(self, args, state, control, **kwargs):
        if torch.cuda.is_available() and args.use_cpu is False:
            torch.cuda.synchronize()  # steps are queued on a GPU: time each one to its end
        self.ends.append(time.perf_counter())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shard", required=True)
    ap.add_argument("--token-dtype", choices=["uint16", "uint32"], default="uint16")
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--seq", type=int, required=True)
    ap.add_argument("--micro-batch", type=int, required=True)
    ap.add_argument("--warmup-steps", type=int, default=3, help="untimed steps first")
    ap.add_argument("--steps", type=int, default=10, help="timed steps")
    ap.add_argument("--lr-warmup", type=int, default=2)
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cpu")
    ap.add_argument("--threads", type=int, default=0)
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    dtype = {"uint16": torch.uint16, "uint32": torch.uint32}[a.token_dtype]
    tokens = torch.from_file(a.shard, shared=False, size=os.path.getsize(a.shard) // dtype.itemsize, dtype=dtype)
    tokens = tokens.to(torch.int64)
    cuda = a.device == "cuda"
    model = AutoModelForCausalLM.from_pretrained(a.model_dir, dtype=torch.float32, attn_implementation="sdpa")
    total = a.warmup_steps + a.steps
    clock = StepClock()
    with tempfile.TemporaryDirectory() as out:
        args = TrainingArguments(
            output_dir=out, per_device_train_batch_size=a.micro_batch, gradient_accumulation_steps=1,
            max_steps=total, learning_rate=6e-4, weight_decay=0.1, adam_beta1=0.9, adam_beta2=0.95,
            max_grad_norm=1.0, lr_scheduler_type="cosine", warmup_steps=a.lr_warmup, optim="adamw_torch_fused",
            logging_steps=total, save_strategy="no", eval_strategy="no", report_to="none", disable_tqdm=True,
            dataloader_num_workers=0, use_cpu=not cuda, bf16=cuda, tf32=cuda or None, seed=0)
        trainer = Trainer(model=model, args=args, train_dataset=Blocks(tokens, a.seq), callbacks=[clock])
        result = trainer.train()
    step_seconds = [end - begin[1] for begin, end in zip(clock.begins, clock.ends)][a.warmup_steps:]
    print(json.dumps({
        "peer": "hf trainer",
        "tokens_per_s": a.micro_batch * a.seq * len(step_seconds) / sum(step_seconds),
        "step_time_ms": 1000 * sum(step_seconds) / len(step_seconds),
        "step_seconds": step_seconds,
        "first_step_start": clock.begins[0][0],
        "peak_mem_mb": torch.cuda.max_memory_allocated() / 2**20 if cuda else None,
        "last_loss": result.training_loss,
        "threads": torch.get_num_threads(),
    }))


if __name__ == "__main__":
    main()
