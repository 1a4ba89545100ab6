"""The model families past GPT-2/Llama/Mistral/Qwen2 against transformers, one tiny random model per
option: an explicit head_dim that is not hidden_size / num_attention_heads (Mistral-NeMo's shape,
Llama with one), sliding windows (Mistral's on every layer, Qwen3's), Qwen3 (per-head q/k RMSNorm,
head_dim, tied and untied, with and without attention biases), OLMo 2 (post-norms, q/k RMSNorm over
the projections, tied and untied, biases, head_dim), Phi-3 (fused qkv_proj and gate_up_proj;
Phi-4-mini's partial rotary factor and LongRoPE), Gemma 2 ((1 + w) sandwich norms, GeGLU, scaled embeddings,
attention and final soft-capping, alternating sliding layers, query_pre_attn_scalar), Gemma 3
(q/k norms, the sliding layers' own RoPE base beside a scaled global one) and the mixtures of
experts Mixtral, Qwen2-MoE and Qwen3-MoE (router, top-k with and without renormalising, dense layers between,
Qwen2-MoE's shared expert).

For each: save_pretrained with every parameter perturbed -> hftrain reads the directory ->
  1. logits, loss and every gradient equal transformers' (1e-5 / 1e-4, as hf_decoders.py);
  2. five steps of training from the directory (`hftrain run finetune-hf model.from=DIR`, AdamW, constant
     learning rate, no clipping, no weight decay, the token shard in order) against transformers'
     model trained by torch.optim.AdamW on the same blocks: every step's loss within 1e-4 relative
     (the first within 1e-5);
  3. the same training with activation checkpointing under zero3 + cpu_offload equals it (1e-6),
     bf16 stays within 2e-2, and `hftrain generate` runs on the trained model; the dense families
     also train split over 2 tensor-parallel ranks (every other one with sequence parallelism)
     within 1e-5 of it, and that run's model, exported, loads in transformers with hftrain's logits;
  4. the trained model exported (`hftrain export --hf`) loads in transformers as the family's class
     with hftrain's logits, loss and gradients.
Options hftrain does not implement are refused naming them (sliding layers no "every N-th layer
global" pattern describes, bidirectional Gemma).

    .venv/bin/python tests/conformance/hf_families.py path/to/hftrain_model_forward path/to/hftrain
"""
import json
import os
import subprocess
import sys
import tempfile

import torch
from transformers import (AutoModelForCausalLM, Gemma2Config, Gemma2ForCausalLM, Gemma3ForCausalLM, Gemma3TextConfig,
                          LlamaConfig, LlamaForCausalLM, MistralConfig, MistralForCausalLM, MixtralConfig,
                          MixtralForCausalLM, Olmo2Config, Olmo2ForCausalLM, Phi3Config, Phi3ForCausalLM, Qwen3Config,
                          Qwen2MoeConfig, Qwen2MoeForCausalLM, Qwen3ForCausalLM, Qwen3MoeConfig,
                          Qwen3MoeForCausalLM)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_decoders  # noqa: E402  (compare, perturb, check and the failures they collect)

check, compare, perturb = hf_decoders.check, hf_decoders.compare, hf_decoders.perturb

VOCAB = 300
SMALL = dict(vocab_size=VOCAB, hidden_size=48, intermediate_size=72, num_hidden_layers=2, num_attention_heads=6,
             num_key_value_heads=2, max_position_embeddings=64, rms_norm_eps=1e-6)

# name -> (model class, config, the architecture the export must name)
CASES = {
    # Mistral-NeMo's shape: heads of 16 where hidden_size / num_attention_heads is 8.
    "mistral-head-dim": (MistralForCausalLM, MistralConfig(**SMALL, head_dim=16, sliding_window=None,
                                                           tie_word_embeddings=False), "LlamaForCausalLM"),
    "llama-head-dim-narrow": (LlamaForCausalLM, LlamaConfig(**dict(SMALL, num_attention_heads=4), head_dim=6,
                                                            tie_word_embeddings=False), "LlamaForCausalLM"),
    "qwen3-untied": (Qwen3ForCausalLM, Qwen3Config(**dict(SMALL, num_attention_heads=4), head_dim=16,
                                                   tie_word_embeddings=False), "Qwen3ForCausalLM"),
    "qwen3-tied-biases": (Qwen3ForCausalLM, Qwen3Config(**SMALL, head_dim=8, attention_bias=True,
                                                        tie_word_embeddings=True,
                                                        rope_parameters={"rope_type": "default",
                                                                         "rope_theta": 1000000.0}),
                          "Qwen3ForCausalLM"),
    # OLMo 2: norms on the sublayers' outputs, q and k normalised over the whole projections.
    "olmo2-untied": (Olmo2ForCausalLM, Olmo2Config(**SMALL, tie_word_embeddings=False), "Olmo2ForCausalLM"),
    "olmo2-tied-biases-head-dim": (Olmo2ForCausalLM, Olmo2Config(**dict(SMALL, num_attention_heads=4), head_dim=10,
                                                                 attention_bias=True, tie_word_embeddings=True),
                                   "Olmo2ForCausalLM"),
    # Phi-3: Llama's block under fused names (qkv_proj, gate_up_proj); Phi-4-mini's partial rotary factor.
    "phi3": (Phi3ForCausalLM, Phi3Config(**dict(SMALL, num_attention_heads=4), resid_pdrop=0.0, embd_pdrop=0.0,
                                         tie_word_embeddings=False), "Phi3ForCausalLM"),
    "phi3-partial-rotary-tied": (Phi3ForCausalLM, Phi3Config(**SMALL,
                                                             resid_pdrop=0.0, embd_pdrop=0.0, tie_word_embeddings=True,
                                                             rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                                                              "partial_rotary_factor": 0.75}),
                                 "Phi3ForCausalLM"),
    # Phi-4-mini's RoPE: LongRoPE's short factors up to original_max_position_embeddings (8) and its
    # long ones past it (training rows of 16), on the first 0.75 of each head.
    "phi3-longrope-partial": (Phi3ForCausalLM, Phi3Config(**SMALL, resid_pdrop=0.0, embd_pdrop=0.0,
                                                          tie_word_embeddings=True, original_max_position_embeddings=8,
                                                          rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0,
                                                                           "partial_rotary_factor": 0.75,
                                                                           "original_max_position_embeddings": 8,
                                                                           "short_factor": [1.0, 1.3, 1.9],
                                                                           "long_factor": [1.0, 4.5, 17.0]}),
                              "Phi3ForCausalLM"),
    # Sliding windows shorter than the sequences (13 and 16 tokens): Mistral's on every layer, Qwen3's
    # on the layers from max_window_layers on (here all).
    "mistral-sliding-window": (MistralForCausalLM, MistralConfig(**SMALL, sliding_window=5, tie_word_embeddings=False),
                               "MistralForCausalLM"),
    "qwen3-sliding-window": (Qwen3ForCausalLM, Qwen3Config(**SMALL, head_dim=8, use_sliding_window=True,
                                                           sliding_window=6, max_window_layers=0,
                                                           tie_word_embeddings=True), "Qwen3ForCausalLM"),
    # Gemma 2: (1 + w) RMSNorms before and after both sublayers, GeGLU, embeddings times sqrt(hidden),
    # query_pre_attn_scalar, attention and final soft-capping low enough to bend these logits,
    # sliding layers (0, 2) alternating with a global one.
    "gemma2": (Gemma2ForCausalLM, Gemma2Config(**dict(SMALL, num_attention_heads=4, num_hidden_layers=3), head_dim=16,
                                               query_pre_attn_scalar=24, sliding_window=4, attn_logit_softcapping=2.0,
                                               final_logit_softcapping=3.0, tie_word_embeddings=True),
               "Gemma2ForCausalLM"),
    "gemma2-untied-biases-no-caps": (Gemma2ForCausalLM, Gemma2Config(**SMALL, head_dim=8, query_pre_attn_scalar=8,
                                                                     sliding_window=3, attention_bias=True,
                                                                     attn_logit_softcapping=None,
                                                                     final_logit_softcapping=None,
                                                                     tie_word_embeddings=False),
                                     "Gemma2ForCausalLM"),
    # Gemma 3: per-head (1 + w) q/k norms; sliding layers with their own RoPE base, the global layer
    # with linear scaling; every third layer global.
    "gemma3": (Gemma3ForCausalLM, Gemma3TextConfig(**dict(SMALL, num_hidden_layers=3), head_dim=12,
                                                   query_pre_attn_scalar=16, sliding_window=5,
                                                   layer_types=["sliding_attention", "sliding_attention",
                                                                "full_attention"],
                                                   rope_parameters={
                                                       "full_attention": {"rope_type": "linear", "factor": 2.0,
                                                                          "rope_theta": 100000.0},
                                                       "sliding_attention": {"rope_type": "default",
                                                                             "rope_theta": 1000.0}},
                                                   tie_word_embeddings=True),
               "Gemma3ForCausalLM"),
    # Final soft-capping; the attention's cap is in Gemma 3's config but transformers never applies it
    # (Gemma3Attention does not pass it on), so hftrain reads it as transformers computes: off.
    "gemma3-softcap-untied": (Gemma3ForCausalLM, Gemma3TextConfig(**SMALL, head_dim=8, sliding_window=4,
                                                                  attn_logit_softcapping=3.0,
                                                                  final_logit_softcapping=4.0,
                                                                  tie_word_embeddings=False),
                              "Gemma3ForCausalLM"),
    # Mixtures of experts, experts computed grouped: Mixtral (every layer, 4 experts, top-2,
    # renormalised, a sliding window) and Qwen3-MoE (8 experts, top-2 without renormalising; every
    # second layer MoE beside dense ones of another size, renormalised).
    "mixtral": (MixtralForCausalLM, MixtralConfig(**SMALL, num_local_experts=4, num_experts_per_tok=2, sliding_window=6,
                                                  tie_word_embeddings=False), "MixtralForCausalLM"),
    "qwen3-moe": (Qwen3MoeForCausalLM, Qwen3MoeConfig(**dict(SMALL, num_attention_heads=4), head_dim=12, num_experts=8,
                                                      num_experts_per_tok=2, moe_intermediate_size=20,
                                                      norm_topk_prob=False, tie_word_embeddings=False),
                  "Qwen3MoeForCausalLM"),
    # The load-balancing loss: transformers adds router_aux_loss_coef x it in training when
    # output_router_logits is on (a large coefficient, so that it moves the routers visibly).
    "mixtral-aux-loss": (MixtralForCausalLM, MixtralConfig(**SMALL, num_local_experts=4, num_experts_per_tok=2,
                                                           output_router_logits=True, router_aux_loss_coef=0.5,
                                                           tie_word_embeddings=True), "MixtralForCausalLM"),
    "qwen3-moe-sparse-step": (Qwen3MoeForCausalLM, Qwen3MoeConfig(**dict(SMALL, num_hidden_layers=3), head_dim=8,
                                                                  num_experts=6, num_experts_per_tok=3,
                                                                  moe_intermediate_size=16, norm_topk_prob=True,
                                                                  decoder_sparse_step=2, tie_word_embeddings=True),
                              "Qwen3MoeForCausalLM"),
    # Qwen2-MoE: Qwen2's block (query/key/value biases) with a shared expert beside the routed ones,
    # scaled by a sigmoid gate; then with those biases off, dense layers between, sliding windows on
    # the odd layers (transformers' Qwen2-MoE pattern) and the load-balancing loss.
    "qwen2-moe-shared": (Qwen2MoeForCausalLM, Qwen2MoeConfig(**SMALL, num_experts=8, num_experts_per_tok=2,
                                                             moe_intermediate_size=20,
                                                             shared_expert_intermediate_size=28, norm_topk_prob=False,
                                                             tie_word_embeddings=False),
                         "Qwen2MoeForCausalLM"),
    "qwen2-moe-sliding-aux": (Qwen2MoeForCausalLM, Qwen2MoeConfig(**dict(SMALL, num_hidden_layers=4), num_experts=4,
                                                                  num_experts_per_tok=2, moe_intermediate_size=16,
                                                                  shared_expert_intermediate_size=12,
                                                                  norm_topk_prob=True, qkv_bias=False,
                                                                  decoder_sparse_step=2, use_sliding_window=True,
                                                                  sliding_window=5, max_window_layers=4,
                                                                  output_router_logits=True, router_aux_loss_coef=0.3,
                                                                  tie_word_embeddings=True),
                              "Qwen2MoeForCausalLM"),
}

REFUSED = {
    # Layer 0 global, layer 1 sliding: no "every N-th layer global" pattern.
    "qwen3-sliding-first-layers-global": (Qwen3ForCausalLM, Qwen3Config(**SMALL, head_dim=8, use_sliding_window=True,
                                                                        sliding_window=8, max_window_layers=1),
                                          "layer_types"),
    "gemma2-bidirectional": (Gemma2ForCausalLM, Gemma2Config(**SMALL, head_dim=8, use_bidirectional_attention=True),
                             "use_bidirectional_attention"),
}

SEQ, MICRO, STEPS, LR = 16, 2, 5, 3e-3


def run(*args, **kw):
    p = subprocess.run(list(args), capture_output=True, text=True, **kw)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(args[:3])} ... exited {p.returncode}:\n{p.stderr[-2000:]}")
    return p.stdout


def train_in_hftrain(hftrain, model_dir, shard, run_dir, env, *extra):
    run(hftrain, "run", "finetune-hf", f"model.from={model_dir}", f"data.train={shard}", "run.export_hf=false",
        "data.format=tokens",
        f"data.seq_len={SEQ}", "data.shuffle=false", "data.validation_fraction=0", "trainer.eval_every=0",
        f"trainer.micro_batch_size={MICRO}", "trainer.grad_accum_steps=1", f"trainer.max_steps={STEPS}",
        "optimizer.name=adamw", f"optimizer.lr={LR}", "optimizer.weight_decay=0", "optimizer.beta1=0.9",
        "optimizer.beta2=0.999", "optimizer.eps=1e-8", "scheduler.name=constant", "scheduler.warmup_steps=0",
        "trainer.max_grad_norm=.inf", "trainer.log_every=1", "tokenizer.type=byte", "trainer.device=cpu",
        "checkpoint.at_end=false", f"run.output_dir={run_dir}", *extra, env=env)
    with open(os.path.join(run_dir, "metrics.jsonl"), encoding="utf-8") as f:
        # The training loss as transformers reports it: with a load-balancing loss, plus its weighted
        # value (hftrain logs it apart, as aux_loss).
        rows = [json.loads(line) for line in f if '"loss"' in line]
        return [r["loss"] + r.get("aux_loss", 0.0) for r in rows]


def splits_over_two(config):
    """Whether tensor parallelism takes the family at tp=2: heads, key/value heads and d_ff that 2
    divides (OLMo 2's q/k norms over all heads split with the heads; a mixture's experts and shared
    expert split by their hidden units)."""
    heads, kv = config.num_attention_heads, config.num_key_value_heads
    hidden = [config.intermediate_size] + [getattr(config, key, 0) or 0 for key in
                                           ("moe_intermediate_size", "shared_expert_intermediate_size")]
    return heads % 2 == 0 and kv % 2 == 0 and all(h % 2 == 0 for h in hidden)


def train_in_transformers(cls, model_dir, tokens):
    """torch's AdamW on the rows hftrain packs in order: row i is tokens[i SEQ : i SEQ + SEQ + 1] (rows
    overlap by one token, so that every next-token target is trained on once)."""
    model = cls.from_pretrained(model_dir, dtype=torch.float32)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=LR, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
    losses = []
    for step in range(STEPS):
        rows = [tokens[i * SEQ:i * SEQ + SEQ + 1] for i in range(step * MICRO, (step + 1) * MICRO)]
        ids = torch.stack(rows).long()
        if getattr(model.config, "output_router_logits", False):
            # The load-balancing loss sees every input token: feed the SEQ inputs hftrain feeds (the
            # row's last token is only a target), and add the weighted aux_loss as transformers does.
            out = model(input_ids=ids[:, :-1])
            loss = torch.nn.functional.cross_entropy(out.logits.reshape(-1, out.logits.shape[-1]),
                                                     ids[:, 1:].reshape(-1))
            loss = loss + model.config.router_aux_loss_coef * out.aux_loss
        else:
            loss = model(input_ids=ids, labels=ids).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def padded_aux_loss(name, forward_bin, model_dir, work, model, ids):
    """A right-padded batch: the load-balancing loss counts the tokens of the attention mask only,
    as transformers' load_balancing_loss_func does with the mask it is given."""
    from safetensors.torch import load_file, save_file
    mask = torch.ones_like(ids)
    mask[1, 8:] = 0
    padded = ids.clone()
    padded[1, 8:] = VOCAB - 1
    results = {}
    for label, tensors in (("masked", {"input_ids": padded, "attention_mask": mask}), ("unmasked", {"input_ids": padded})):
        in_file = os.path.join(work, f"{name}-{label}-in.safetensors")
        out_file = os.path.join(work, f"{name}-{label}-out.safetensors")
        save_file(tensors, in_file)
        run(forward_bin, model_dir, in_file, out_file)
        results[label] = load_file(out_file)["aux_loss"].item()
    model.eval()
    with torch.no_grad():
        want = model(input_ids=padded, attention_mask=mask, output_router_logits=True).aux_loss.item()
    rel = abs(results["masked"] - want) / abs(want)
    check(rel <= 1e-5, f"{name}: the padded batch's load-balancing loss {results['masked']} vs transformers' {want}")
    check(abs(results["unmasked"] - want) / abs(want) > 1e-4, f"{name}: the padding changes no load-balancing loss")
    print(f"{name}: padded batch's load-balancing loss {results['masked']:.6f}, transformers' (attention mask) "
          f"{want:.6f} ({rel:.1e}); counting the padding too: {results['unmasked']:.6f}")


def main():
    forward_bin, hftrain = sys.argv[1], sys.argv[2]
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="hftrain-hf-families-") as work:
        env = dict(os.environ, HFTRAIN_CACHE_DIR=os.path.join(work, "cache"))
        # Ids the byte tokenizer has (the shard is checked against it), in a larger model vocabulary.
        tokens = torch.randint(0, 256, (4096,), generator=torch.Generator().manual_seed(5), dtype=torch.int32)
        shard = os.path.join(work, "tokens.bin")
        tokens.numpy().astype("uint16").tofile(shard)
        for i, (name, (cls, config, export_arch)) in enumerate(CASES.items()):
            # pad_token_id is an embedding row transformers never trains (padding_idx; Phi-3's and
            # OLMo 2's configs name one by default): the last id, which the data never holds.
            config.pad_token_id = VOCAB - 1
            torch.manual_seed(i)
            model = cls(config)
            perturb(model, i)
            model_dir = os.path.join(work, name)
            model.save_pretrained(model_dir)
            # Ids below 256 (the byte tokenizer's, as in training): an export names the byte
            # tokenizer's pad (257) as pad_token_id.
            ids = torch.randint(0, 256, (2, 13), generator=torch.Generator().manual_seed(100 + i))
            compare(name, forward_bin, model_dir, work, model, ids)
            if getattr(config, "output_router_logits", False):
                padded_aux_loss(name, forward_bin, model_dir, work, model, ids)
            if "longrope" in name:  # 8 positions: still the short factors
                compare(name + " (8 positions: short factors)", forward_bin, model_dir, work, model, ids[:, :8].contiguous())

            run_dir = os.path.join(work, "run-" + name)
            ours = train_in_hftrain(hftrain, model_dir, shard, run_dir, env)
            theirs = train_in_transformers(cls, model_dir, tokens)
            check(len(ours) == STEPS, f"{name}: hftrain logged {len(ours)} losses, expected {STEPS}")
            worst = 0.0
            for step, (a, b) in enumerate(zip(ours, theirs)):
                rel = abs(a - b) / abs(b)
                worst = max(worst, rel)
                check(rel <= (1e-5 if step == 0 else 1e-4),
                      f"{name}: step {step + 1} loss {a:.7f}, transformers + torch AdamW {b:.7f} ({rel:.1e})")
            print(f"{name}: {STEPS} training steps, losses {ours[0]:.5f} -> {ours[-1]:.5f}, "
                  f"worst relative difference from transformers + AdamW {worst:.1e}")

            # The same run with activation checkpointing under zero3 + cpu_offload (the sharded
            # strategy's code path in one process), and in bf16: the family needs nothing of its own.
            # (With the load-balancing loss the routers' statistics leave each checkpointed block
            # as outputs, so that its gradient reaches them through the recomputation.)
            sharded = train_in_hftrain(hftrain, model_dir, shard, run_dir + "-zero3", env,
                                       "model.activation_checkpointing=true", "distributed.strategy=zero3",
                                       "distributed.cpu_offload=true")
            apart = max(abs(a - b) / abs(b) for a, b in zip(sharded, ours))
            what = "zero3 + cpu_offload + activation checkpointing"
            check(len(sharded) == STEPS and apart <= 1e-6, f"{name}: {what} losses {sharded}, plain {ours}")
            bf16 = train_in_hftrain(hftrain, model_dir, shard, run_dir + "-bf16", env, "trainer.precision=bf16")
            bf16_apart = max(abs(a - b) / abs(b) for a, b in zip(bf16, ours))
            check(len(bf16) == STEPS and bf16_apart <= 2e-2, f"{name}: bf16 losses {bf16}, fp32 {ours}")
            gen = subprocess.run([hftrain, "generate", os.path.join(run_dir, "final"), "--prompt", "The",
                                  "--max-new-tokens", "8"], capture_output=True, env=env)  # random bytes: not UTF-8
            text = gen.stdout.decode("utf-8", errors="replace")
            check(gen.returncode == 0 and text.startswith("The"), f"{name}: generate exited {gen.returncode}: {text!r}")
            print(f"{name}: {what} {apart:.1e} from the plain run, bf16 "
                  f"{bf16_apart:.1e}; generate: {text.strip()!r}")

            if splits_over_two(config):
                # Every other family with sequence parallelism, the others also split into 2
                # pipeline stages (4 processes; mixtures of experts are not split into stages).
                moe = any(getattr(config, key, 0) for key in ("num_local_experts", "num_experts"))
                sp = "true" if i % 2 else "false"
                pp = 1 if i % 2 or moe else 2
                split = train_in_hftrain(hftrain, model_dir, shard, run_dir + "-tp2", env,
                                         "distributed.tensor_parallel=2", f"distributed.sequence_parallel={sp}",
                                         f"distributed.pipeline_parallel={pp}", "--nproc-per-node", str(2 * pp))
                tp_apart = max(abs(a - b) / abs(b) for a, b in zip(split, ours))
                check(len(split) == STEPS and tp_apart <= 1e-5,
                      f"{name}: tp=2 x pp={pp} losses {split}, plain {ours}")
                tp_exported = os.path.join(work, name + "-tp2-hf")
                run(hftrain, "export", os.path.join(run_dir + "-tp2", "final"), "--hf", tp_exported)
                tp_loaded = AutoModelForCausalLM.from_pretrained(tp_exported, dtype=torch.float32)
                compare(name + f" (trained at tp=2 x pp={pp}, exported, loaded by transformers)", forward_bin,
                        os.path.join(run_dir + "-tp2", "final"), work, tp_loaded,
                        torch.randint(0, 256, (2, 13), generator=torch.Generator().manual_seed(300 + i)))
                print(f"{name}: tensor parallel 2 (sequence parallel {sp}) x pipeline parallel {pp} {tp_apart:.1e} "
                      "from the plain run")

            exported = os.path.join(work, name + "-hf")
            run(hftrain, "export", os.path.join(run_dir, "final"), "--hf", exported)
            with open(os.path.join(exported, "config.json"), encoding="utf-8") as f:
                arch = json.load(f)["architectures"]
            check(arch == [export_arch], f"{name}: exported as {arch}, expected {export_arch}")
            loaded = AutoModelForCausalLM.from_pretrained(exported, dtype=torch.float32)
            byte_ids = torch.randint(0, 256, (2, 13), generator=torch.Generator().manual_seed(200 + i))
            compare(name + " (trained, exported, loaded by transformers)", forward_bin,
                    os.path.join(run_dir, "final"), work, loaded, byte_ids)

        for name, (cls, config, needle) in REFUSED.items():
            model_dir = os.path.join(work, name)
            cls(config).save_pretrained(model_dir)
            p = subprocess.run([hftrain, "config", "quickstart", f"model.from={model_dir}"], capture_output=True,
                               text=True, env=env)
            check(p.returncode == 2 and needle in p.stderr,
                  f"{name}: expected a refusal naming {needle}, got exit {p.returncode}: {p.stderr.strip()}")
            print(f"{name}: refused: {p.stderr.strip().splitlines()[0] if p.stderr.strip() else ''}")
    if hf_decoders.failures:
        print(f"{len(hf_decoders.failures)} failures", file=sys.stderr)
        return 1
    print("ok: explicit head_dim, sliding windows, Qwen3, OLMo 2, Phi-3, Gemma 2, Gemma 3, Mixtral, Qwen2-MoE and Qwen3-MoE equal "
          "transformers (logits, gradients, training, export)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
