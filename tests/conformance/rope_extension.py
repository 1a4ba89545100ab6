"""RoPE extension at fine-tune time: a Llama saved by transformers with 32 positions, fine-tuned by
hftrain with `model.from` plus a longer `model.max_seq_len` and `model.rope_scaling.*` (linear, dynamic,
yarn, llama3) on rows of 64 tokens, exported with `hftrain export --hf`: the export's config.json
names the new context (max_position_embeddings 64, the scaling, original_max_position_embeddings 32
where the type reads it, taken from the directory's context), and transformers loads it with
hftrain's logits, loss and gradients over 60 positions. GPT-2's learned positions cannot be extended:
refused with the shape that differs.

    .venv/bin/python tests/conformance/rope_extension.py path/to/hftrain_model_forward path/to/hftrain
"""
import json
import os
import subprocess
import sys
import tempfile

import torch
from transformers import AutoModelForCausalLM, GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_decoders  # noqa: E402  (compare, perturb, check and the failures they collect)

check, compare, perturb = hf_decoders.check, hf_decoders.compare, hf_decoders.perturb

VOCAB = 300
SHORT, LONG = 32, 64
BASE = LlamaConfig(vocab_size=VOCAB, hidden_size=48, intermediate_size=72, num_hidden_layers=2, num_attention_heads=6,
                   num_key_value_heads=2, max_position_embeddings=SHORT, rms_norm_eps=1e-6, tie_word_embeddings=False,
                   pad_token_id=VOCAB - 1)
# type -> extra overrides
SCALINGS = {
    "linear": [],
    "dynamic": [],
    "yarn": [],
    "llama3": ["model.rope_scaling.low_freq_factor=1", "model.rope_scaling.high_freq_factor=4"],
}
WITH_ORIGINAL = {"yarn", "llama3"}


def run(*args, env):
    p = subprocess.run(list(args), capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(args[:3])} ... exited {p.returncode}:\n{p.stderr[-2000:]}")
    return p


def finetune(hftrain, model_dir, shard, run_dir, env, *extra):
    return run(hftrain, "run", "finetune-hf", f"model.from={model_dir}", f"data.train={shard}", "data.format=tokens",
               f"data.seq_len={LONG}", "data.shuffle=false", "data.validation_fraction=0", "trainer.eval_every=0",
               "trainer.micro_batch_size=2", "trainer.max_steps=2", "optimizer.lr=1e-3", "scheduler.name=constant",
               "scheduler.warmup_steps=0", "tokenizer.type=byte", "trainer.device=cpu", "run.export_hf=false",
               "checkpoint.at_end=false", f"run.output_dir={run_dir}", *extra, env=env)


def main():
    forward_bin, hftrain = sys.argv[1], sys.argv[2]
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="hftrain-rope-extension-") as work:
        env = dict(os.environ, HFTRAIN_CACHE_DIR=os.path.join(work, "cache"))
        tokens = torch.randint(0, 256, (2048,), generator=torch.Generator().manual_seed(5), dtype=torch.int32)
        shard = os.path.join(work, "tokens.bin")
        tokens.numpy().astype("uint16").tofile(shard)
        torch.manual_seed(0)
        base = LlamaForCausalLM(BASE)
        perturb(base, 0)
        base_dir = os.path.join(work, "base")
        base.save_pretrained(base_dir)

        for i, (kind, extra) in enumerate(SCALINGS.items()):
            run_dir = os.path.join(work, "run-" + kind)
            p = finetune(hftrain, base_dir, shard, run_dir, env, f"model.max_seq_len={LONG}",
                         f"model.rope_scaling.type={kind}", "model.rope_scaling.factor=2", *extra)
            check(f"the RoPE context changes from {SHORT} positions" in p.stderr,
                  f"{kind}: the log does not name the extended context: {p.stderr[-600:]}")
            exported = os.path.join(work, kind + "-hf")
            run(hftrain, "export", os.path.join(run_dir, "final"), "--hf", exported, env=env)
            with open(os.path.join(exported, "config.json"), encoding="utf-8") as f:
                config = json.load(f)
            rope = config.get("rope_parameters") or config.get("rope_scaling") or {}
            check(config["max_position_embeddings"] == LONG, f"{kind}: max_position_embeddings "
                                                             f"{config['max_position_embeddings']}, expected {LONG}")
            check(rope.get("rope_type") == kind and rope.get("factor") == 2.0, f"{kind}: exported RoPE {rope}")
            if kind in WITH_ORIGINAL:
                check(rope.get("original_max_position_embeddings") == SHORT,
                      f"{kind}: original_max_position_embeddings {rope.get('original_max_position_embeddings')}, "
                      f"expected the directory's {SHORT}")
            loaded = AutoModelForCausalLM.from_pretrained(exported, dtype=torch.float32)
            ids = torch.randint(0, 256, (2, 60), generator=torch.Generator().manual_seed(100 + i))
            compare(f"{kind}, extended from {SHORT} to {LONG} positions (trained, exported, loaded by transformers)",
                    forward_bin, os.path.join(run_dir, "final"), work, loaded, ids)
            print(f"{kind}: fine-tuned at {LONG} positions from a {SHORT}-position model; the export equals "
                  f"transformers' {rope.get('rope_type')} model")

        gpt2_dir = os.path.join(work, "gpt2")
        GPT2LMHeadModel(GPT2Config(vocab_size=VOCAB, n_positions=SHORT, n_embd=36, n_layer=2, n_head=3)).save_pretrained(
            gpt2_dir)
        p = subprocess.run([hftrain, "run", "finetune-hf", f"model.from={gpt2_dir}", f"model.max_seq_len={LONG}",
                            f"data.train={shard}", "data.format=tokens", f"data.seq_len={LONG}",
                            "tokenizer.type=byte", "trainer.max_steps=1", "scheduler.warmup_steps=0",
                            "data.validation_fraction=0", "trainer.eval_every=0", f"run.output_dir={work}/gpt2-run"],
                           capture_output=True, text=True, env=env)
        check(p.returncode == 2 and "different shape" in p.stderr and f"model.max_seq_len={SHORT}" in p.stderr,
              f"gpt2: a longer context must be refused (learned positions); exit {p.returncode}: {p.stderr[-400:]}")
    if hf_decoders.failures:
        print(f"{len(hf_decoders.failures)} failures", file=sys.stderr)
        return 1
    print("ok: linear, dynamic, yarn and llama3 context extension at fine-tune time equal transformers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
