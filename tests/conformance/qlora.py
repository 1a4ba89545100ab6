"""QLoRA (peft.quantize_base) against bitsandbytes and peft.

    .venv/bin/python tests/conformance/qlora.py path/to/hftrain path/to/hftrain_model_logits

A Llama base written by transformers' save_pretrained; `hftrain run` with peft.method=lora and
peft.quantize_base=nf4 (then int8) trains adapters on every linear layer for a few steps. Then:
  - the run says how it stored the base, and its loss fell; (nf4) a resume from its checkpoint
    quantizes the base again and ends with the same adapters bit for bit, and zero3 on 2 ranks
    gives 1 rank's losses (two micro-batches) within 1e-5, and the same base read from hftrain's
    own model directory (fused weights stored whole) gives the same losses;
  - the reference: transformers loads the same base quantized by bitsandbytes (BitsAndBytesConfig:
    nf4 with double quantization, or LLM.int8 without outlier columns; lm_head kept); its stored
    weights, dequantized by bitsandbytes, go into a full-precision model, peft puts hftrain's
    adapters on it, and its logits equal hftrain's for the quantized base plus adapters
    (hftrain_model_logits --quantize-base) within 1e-5 of their scale, while quantizing moves them
    by far more. hftrain quantizes each Hugging Face projection of its fused q/k/v and gate/up
    weights apart, as bitsandbytes quantizes each module.
Exits 1 on any difference.
"""
import json
import os
import shutil
import sys
import tempfile

import torch
from peft import PeftModel
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM, BitsAndBytesConfig, LlamaConfig, LlamaForCausalLM

from peft_common import IDS, check, finish, largest_relative_difference, logits_of, losses_of, run, write_corpus


def bnb_config(kind):
    if kind == "nf4":
        return BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
                                  bnb_4bit_compute_dtype=torch.float32)
    return BitsAndBytesConfig(load_in_8bit=True, llm_int8_threshold=0.0)


def dequantized_copy(quantized, base_dir, kind):
    """A full-precision model whose linear layers hold bitsandbytes' quantized weights, dequantized
    by bitsandbytes (dequantize_4bit of the packed codes and quant state; CB x SCB / 127)."""
    import bitsandbytes as bnb
    import bitsandbytes.functional as bnb_f
    out = AutoModelForCausalLM.from_pretrained(base_dir, dtype=torch.float32).eval()
    modules = dict(out.named_modules())
    count = 0
    for name, m in quantized.named_modules():
        if kind == "nf4" and isinstance(m, bnb.nn.Linear4bit):
            weight = bnb_f.dequantize_4bit(m.weight.data, m.weight.quant_state).float()
        elif kind == "int8" and isinstance(m, bnb.nn.Linear8bitLt):
            codes = m.weight.CB if getattr(m.weight, "CB", None) is not None else m.weight.data
            weight = codes.float() * m.weight.SCB.float()[:, None] / 127.0
        else:
            continue
        with torch.no_grad():
            modules[name].weight.copy_(weight)
        count += 1
    check(count == 14, f"{kind}: bitsandbytes quantized {count} layers, not the 14 of the blocks")
    return out


def main():
    hftrain, logits_bin = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory(prefix="hftrain-qlora-") as work:
        torch.manual_seed(0)
        base_dir = os.path.join(work, "base")
        LlamaForCausalLM(LlamaConfig(vocab_size=300, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                     num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                     rope_theta=10000.0, tie_word_embeddings=False,
                                     rms_norm_eps=1e-5)).save_pretrained(base_dir)
        corpus = write_corpus(work)
        env = dict(os.environ, HFTRAIN_CACHE_DIR=os.path.join(work, "cache"))
        ids = IDS
        full = AutoModelForCausalLM.from_pretrained(base_dir, dtype=torch.float32).eval()
        for kind in ("nf4", "int8"):
            run_dir = os.path.join(work, "run-" + kind)
            common = [f"data.train={corpus}", "data.separator='%'", "model.n_layer=2", "model.max_seq_len=64",
                      "data.seq_len=32", "model.vocab_size=300", "optimizer.lr=0.02", "scheduler.warmup_steps=0",
                      "trainer.eval_every=0", "data.validation_fraction=0", "trainer.log_every=1",
                      f"model.from={base_dir}", "model.arch=llama", "model.n_head=4", "model.n_kv_head=2",
                      "model.d_model=64", "model.d_ff=128", "model.rope_theta=10000", "model.tie_embeddings=false",
                      "model.norm_eps=1e-5", "peft.method=lora", "peft.lora.r=4", "peft.lora.alpha=8",
                      "peft.lora.target_modules=[all-linear]", f"peft.quantize_base={kind}", "trainer.max_steps=8",
                      "trainer.device=cpu"]
            log = run(hftrain, "run", "quickstart", *common, "checkpoint.every_steps=4", f"run.output_dir={run_dir}",
                      stderr_too=True, env=env)
            check(f"linear layers (" in log and f"stored as {kind}" in log, f"{kind}: no QLoRA line in the log")
            losses = losses_of(run_dir)
            check(len(losses) == 8 and losses[-1] < losses[0], f"{kind}: the losses did not fall: {losses}")
            final = os.path.join(run_dir, "final")
            ours = torch.tensor(json.loads(run(logits_bin, "--quantize-base", kind, final, *map(str, ids))))
            quantized = AutoModelForCausalLM.from_pretrained(base_dir, quantization_config=bnb_config(kind),
                                                             device_map="cpu", dtype=torch.float32)
            # bitsandbytes' own CPU forward is not its dequantized weight times the input: LLM.int8
            # also quantizes the activations, and bitsandbytes 0.50's 4-bit CPU kernel (its AVX-512
            # path) gave a layer output 0.56 away from its own dequantize_4bit here. hftrain
            # computes with the dequantized weight (as bitsandbytes' backward and its CUDA 4-bit
            # path do): the reference is bitsandbytes' stored quantization, dequantized by it.
            theirs = logits_of(PeftModel.from_pretrained(dequantized_copy(quantized, base_dir, kind), final).eval(), ids)
            unquantized = logits_of(PeftModel.from_pretrained(full, final).eval(), ids)
            diff = (ours - theirs).abs().max().item()
            effect = (theirs - unquantized).abs().max().item()
            scale = ours.abs().max().item()
            check(effect > 1e-4 and diff <= 1e-5 * max(1.0, scale),
                  f"{kind}: hftrain's logits differ from bitsandbytes' by {diff} (scale {scale}); quantizing moves "
                  f"them by {effect}")
            print(f"{kind}: losses {losses[0]:.4f} -> {losses[-1]:.4f}; hftrain vs bitsandbytes + peft: {diff:.2e}, "
                  f"quantized vs full precision: {effect:.2e}")
            full = AutoModelForCausalLM.from_pretrained(base_dir, dtype=torch.float32).eval()  # peft wrapped it
            if kind == "nf4":
                # A resume quantizes the base again and continues bit for bit.
                resumed = os.path.join(work, "resumed-" + kind)
                os.makedirs(resumed)
                shutil.copytree(os.path.join(run_dir, "checkpoint-4"), os.path.join(resumed, "checkpoint-4"))
                run(hftrain, "resume", os.path.join(resumed, "checkpoint-4"), env=env)
                a = load_file(os.path.join(final, "adapter_model.safetensors"))
                b = load_file(os.path.join(resumed, "final", "adapter_model.safetensors"))
                check(a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a),
                      f"{kind}: the resumed run's adapters differ from the uninterrupted run's")
                # From hftrain's own model directory (fused q/k/v and gate/up stored whole, split
                # into their projections for quantizing): the same losses as from the Hugging Face one.
                own = os.path.join(work, "own")
                run(hftrain, "run", "quickstart", *[a for a in common if not a.startswith("peft.")], "optimizer.lr=0",
                    "trainer.max_steps=1", f"run.output_dir={own}", env=env)
                from_own = os.path.join(work, "from-own-" + kind)
                own_log = run(hftrain, "run", "quickstart", *common, f"model.from={os.path.join(own, 'final')}",
                              f"run.output_dir={from_own}", stderr_too=True, env=env)
                check(f"starting from the weights in {os.path.join(own, 'final')}" in own_log,
                      f"{kind}: the run did not read hftrain's own directory")
                check(losses_of(from_own) == losses, f"{kind}: from hftrain's own directory the losses are "
                      f"{losses_of(from_own)}, not {losses}")
                # zero3 on 2 ranks shards the adapters; each rank quantizes the same base.
                halves = os.path.join(work, "accum-" + kind)
                ranks = os.path.join(work, "zero3-" + kind)
                run(hftrain, "run", "quickstart", *common, "trainer.grad_accum_steps=2", f"run.output_dir={halves}", env=env)
                run(hftrain, "run", "quickstart", *common, "distributed.strategy=zero3", "--nproc-per-node", "2",
                    f"run.output_dir={ranks}", env=env)
                one, two = losses_of(halves), losses_of(ranks)
                worst = largest_relative_difference(one, two)
                check(worst <= 1e-5, f"{kind}: zero3 on 2 ranks differs from 1 rank by {worst} relative")
                print(f"{kind}: zero3 on 2 ranks vs 1 rank (2 micro-batches): losses within {worst:.1e}")
    return finish("ok: hftrain's QLoRA base computes as bitsandbytes' does")

if __name__ == "__main__":
    sys.exit(main())
