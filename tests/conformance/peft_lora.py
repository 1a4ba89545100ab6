"""LoRA fine-tuning against the peft library.

    .venv/bin/python tests/conformance/peft_lora.py path/to/hftrain path/to/hftrain_model_logits

For a Llama (grouped-query attention, untied head) and a GPT-2 base written by transformers'
save_pretrained, and DoRA (peft.lora.use_dora) on the Llama, `hftrain run` with peft.method=lora
trains adapters for a few steps; its final/
holds adapter_config.json and adapter_model.safetensors. Then:
  - peft.PeftModel.from_pretrained(base, final/) gives hftrain's logits (fp32, 1e-5 of their
    scale), and they differ from the base model's (the adapters did train);
  - the base weights are untouched: the checkpoint holds only the adapters (and saved modules);
  - `hftrain export --hf --merge` writes a model whose logits in transformers equal the same;
  - peft.from=final/ continues from the adapter: its first loss equals the loss the adapter gives;
  - (llama) a resume from a mid-run checkpoint gives the uninterrupted run's losses bit for bit, and
    two ranks under ddp and zero3 give one rank's losses (two micro-batches) within 1e-5.
Exits 1 on any difference.
"""
import json
import os
import shutil
import sys
import tempfile

import torch
from peft import PeftModel
from safetensors import safe_open
from transformers import AutoModelForCausalLM, GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

from peft_common import IDS, check, finish, largest_relative_difference, logits_of, losses_of, run, write_corpus


def bases(work):
    torch.manual_seed(0)
    llama = LlamaForCausalLM(LlamaConfig(vocab_size=300, hidden_size=48, intermediate_size=72, num_hidden_layers=2,
                                         num_attention_heads=6, num_key_value_heads=2, max_position_embeddings=64,
                                         rope_theta=10000.0, tie_word_embeddings=False, rms_norm_eps=1e-5))
    gpt2 = GPT2LMHeadModel(GPT2Config(vocab_size=300, n_embd=48, n_layer=2, n_head=4, n_positions=64))
    out = {}
    for name, model, args in (
            ("llama", llama, ["model.arch=llama", "model.n_head=6", "model.n_kv_head=2", "model.d_model=48",
                              "model.d_ff=72", "model.rope_theta=10000", "model.tie_embeddings=false",
                              "model.norm_eps=1e-5", "peft.lora.target_modules=[all-linear]",
                              "peft.modules_to_save=[lm_head]", "peft.lora.use_rslora=true"]),
            ("gpt2", gpt2, ["model.arch=gpt2", "model.n_head=4", "model.d_model=48", "model.d_ff=192"])):
        d = os.path.join(work, "base-" + name)
        model.save_pretrained(d)
        out[name] = (d, args)
    # DoRA on the same Llama base: the magnitudes train too (with adapter dropout, peft's other path).
    out["llama-dora"] = (out["llama"][0], [*out["llama"][1], "peft.lora.use_dora=true", "peft.lora.dropout=0.05"])
    return out


def check_resume_and_ranks(hftrain, work, name, common, env):
    """A resume from checkpoint-4 of an 8-step run equals the run; 2 ranks equal 1 rank."""
    ref = os.path.join(work, "ref-" + name)
    run(hftrain, "run", "quickstart", *common, "trainer.max_steps=8", "checkpoint.every_steps=4",
        "trainer.grad_accum_steps=2", "trainer.micro_batch_size=4", f"run.output_dir={ref}", env=env)
    resumed = os.path.join(work, "resumed-" + name)
    shutil.copytree(ref, resumed)
    for gone in ("checkpoint-8", "final"):
        shutil.rmtree(os.path.join(resumed, gone), ignore_errors=True)
    with open(os.path.join(resumed, "metrics.jsonl"), encoding="utf-8") as f:
        kept = [line for line in f if json.loads(line).get("step", 0) <= 4]
    with open(os.path.join(resumed, "metrics.jsonl"), "w", encoding="utf-8") as f:
        f.writelines(kept)
    run(hftrain, "resume", os.path.join(resumed, "checkpoint-4"), env=env)
    a, b = losses_of(ref), losses_of(resumed)
    check(len(a) == 8 and a == b, f"{name}: resumed losses {b} differ from the uninterrupted {a}")
    print(f"{name}: resume from checkpoint-4 gives the uninterrupted losses: {a == b}")
    for strategy in ("ddp", "zero3"):
        out = os.path.join(work, f"{strategy}-{name}")
        run(hftrain, "run", "quickstart", *common, "trainer.max_steps=8", "trainer.micro_batch_size=4",
            f"distributed.strategy={strategy}", f"run.output_dir={out}", "--nproc-per-node", "2", env=env)
        c = losses_of(out)
        worst = largest_relative_difference(a, c)
        check(worst <= 1e-5, f"{name}: 2 ranks under {strategy} give losses {c}, 1 rank {a}")
        print(f"{name}: 2 ranks under {strategy} against 1 rank: largest relative loss difference {worst:.1e}")


def main():
    hftrain, logits_bin = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory(prefix="hftrain-peft-") as work:
        corpus = write_corpus(work)
        env = dict(os.environ, HFTRAIN_CACHE_DIR=os.path.join(work, "cache"))
        ids = IDS
        for name, (base_dir, arch_args) in bases(work).items():
            run_dir = os.path.join(work, "run-" + name)
            common = [f"data.train={corpus}", "data.separator='%'", "model.n_layer=2", "model.max_seq_len=64",
                      "data.seq_len=32", "model.vocab_size=300", "optimizer.lr=0.02", "scheduler.warmup_steps=0",
                      "trainer.eval_every=0", "data.validation_fraction=0", "trainer.log_every=1",
                      f"model.from={base_dir}", "peft.method=lora", "peft.lora.r=4", "peft.lora.alpha=8", *arch_args]
            run(hftrain, "run", "quickstart", *common, "trainer.max_steps=8", f"run.output_dir={run_dir}", env=env)
            final = os.path.join(run_dir, "final")
            check(os.path.exists(os.path.join(final, "adapter_config.json")), f"{name}: no adapter_config.json in final/")

            base = AutoModelForCausalLM.from_pretrained(base_dir, dtype=torch.float32).eval()
            base_logits = logits_of(base, ids)
            # hftrain plan counts the adapters as peft does: r x (in + out) per adapted module.
            trainable = sum(p.numel() for n, p in PeftModel.from_pretrained(
                AutoModelForCausalLM.from_pretrained(base_dir, dtype=torch.float32), final,
                is_trainable=True).named_parameters() if "lora_" in n)
            plan = run(hftrain, "plan", "quickstart", *common, "--nproc", "2", env=env)
            check(f"{trainable} trainable parameters" in plan,
                  f"{name}: hftrain plan does not count {trainable} trainable parameters:\n{plan[:600]}")
            peft_model = PeftModel.from_pretrained(base, final).eval()
            theirs = logits_of(peft_model, ids)
            ours = torch.tensor(json.loads(run(logits_bin, final, *map(str, ids))))
            scale = ours.abs().max().item()
            diff = (theirs - ours).abs().max().item()
            moved = (theirs - base_logits).abs().max().item()
            check(diff <= 1e-5 * max(1.0, scale), f"{name}: peft's logits differ from hftrain's by {diff} (scale {scale})")
            check(moved > 1e-3, f"{name}: the adapters did not change the logits ({moved})")
            print(f"{name}: peft loads hftrain's adapter: max |logit| {scale:.3f}, difference {diff:.2e}, "
                  f"change from the base {moved:.3f}")

            # The checkpoint holds the trained tensors only.
            ckpts = sorted(d for d in os.listdir(run_dir) if d.startswith("checkpoint-"))
            names = []
            for f in os.listdir(os.path.join(run_dir, ckpts[-1])):
                if f.startswith("model") and f.endswith(".safetensors"):
                    with safe_open(os.path.join(run_dir, ckpts[-1], f), "pt") as st:
                        names += list(st.keys())
            frozen = [n for n in names if ".lora." not in n and n != "lm_head.weight"]
            check(names and not frozen, f"{name}: the checkpoint holds frozen weights: {frozen[:4]}")

            merged = os.path.join(work, "merged-" + name)
            run(hftrain, "export", final, "--hf", merged, "--merge")
            exported = AutoModelForCausalLM.from_pretrained(merged, dtype=torch.float32).eval()
            mdiff = (logits_of(exported, ids) - theirs).abs().max().item()
            check(mdiff <= 1e-4 * max(1.0, scale), f"{name}: the merged export's logits differ by {mdiff}")
            print(f"{name}: merged export in transformers: difference {mdiff:.2e}")

            # peft.from continues the adapter: the first loss of the new run is the adapter's.
            again = os.path.join(work, "again-" + name)
            run(hftrain, "run", "quickstart", *common, "trainer.max_steps=2", f"peft.from={final}",
                "optimizer.lr=0", f"run.output_dir={again}", env=env)
            with open(os.path.join(run_dir, "metrics.jsonl"), encoding="utf-8") as f:
                first_run = [json.loads(line)["loss"] for line in f if '"loss"' in line]
            with open(os.path.join(again, "metrics.jsonl"), encoding="utf-8") as f:
                second = [json.loads(line)["loss"] for line in f if '"loss"' in line]
            check(second and second[0] < first_run[0] - 1e-3,
                  f"{name}: peft.from starts at loss {second[:1]}, not below the first run's start {first_run[:1]}")
            print(f"{name}: losses {first_run[0]:.4f} -> {first_run[-1]:.4f}; peft.from starts at {second[0]:.4f}")
            if name == "llama":
                check_resume_and_ranks(hftrain, work, name, common, env)
    return finish("ok: hftrain's LoRA adapters load in peft with hftrain's logits")

if __name__ == "__main__":
    sys.exit(main())
