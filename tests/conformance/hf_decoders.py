"""hftrain's Hugging Face decoders against transformers, on tiny random models it makes itself.

For each architecture hftrain reads (GPT-2 tied and untied; Llama with GQA, odd sizes, untied,
attention and MLP biases, tied; RoPE scaling linear, dynamic, llama3, yarn; Mistral with no
window, one that covers the model and a shorter one; Qwen2 with its q/k/v biases, tied and untied):
save_pretrained (with every parameter perturbed, so biases and norms are not zeros and ones) ->
hftrain loads the directory -> logits and loss equal transformers' within 1e-5 (fp32) and every
parameter's gradient after one backward pass within 1e-4 of its largest value. Sharded
save_pretrained directories load too. Options hftrain does not implement (sliding layers below
global ones, longrope) are refused with a message naming them.

Round trips: hftrain models shaped like Qwen2 and with RoPE scaling, trained briefly, exported
with `hftrain export --hf --shard-size` (sharded), load in transformers with the same logits and
gradients, and read back into hftrain; a Qwen2 directory from save_pretrained trains on in hftrain
(`model.from`).

    .venv/bin/python tests/conformance/hf_decoders.py path/to/hftrain_model_forward path/to/hftrain
"""
import json
import math
import os
import re
import subprocess
import sys
import tempfile

import torch
from safetensors.torch import load_file, save_file
from transformers import (AutoModelForCausalLM, GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM,
                          MistralConfig, MistralForCausalLM, Qwen2Config, Qwen2ForCausalLM)

failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
        print("FAIL:", message, file=sys.stderr)


def llama3(theta=10000.0):
    return {"rope_type": "llama3", "rope_theta": theta, "factor": 8.0, "low_freq_factor": 1.0,
            "high_freq_factor": 4.0, "original_max_position_embeddings": 16}


LLAMA = dict(vocab_size=101, hidden_size=48, intermediate_size=75, num_hidden_layers=2, num_attention_heads=6,
             num_key_value_heads=2, max_position_embeddings=64, rms_norm_eps=1e-5, tie_word_embeddings=False)

# name -> (model class, config)
CASES = {
    "gpt2-tied": (GPT2LMHeadModel, GPT2Config(vocab_size=97, n_positions=40, n_embd=36, n_layer=2, n_head=3,
                                               resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)),
    "gpt2-untied": (GPT2LMHeadModel, GPT2Config(vocab_size=97, n_positions=40, n_embd=36, n_layer=2, n_head=3,
                                                 n_inner=52, tie_word_embeddings=False, resid_pdrop=0.0,
                                                 embd_pdrop=0.0, attn_pdrop=0.0)),
    "llama-gqa-untied": (LlamaForCausalLM, LlamaConfig(**LLAMA, rope_parameters={"rope_type": "default",
                                                                                  "rope_theta": 10000.0})),
    "llama-biases-tied-llama3": (LlamaForCausalLM, LlamaConfig(
        **dict(LLAMA, hidden_size=64, num_attention_heads=4, num_key_value_heads=1, tie_word_embeddings=True),
        attention_bias=True, mlp_bias=True, rope_parameters=llama3())),
    "llama-linear": (LlamaForCausalLM, LlamaConfig(**LLAMA, rope_parameters={"rope_type": "linear",
                                                                              "rope_theta": 5000.0, "factor": 2.5})),
    "llama-dynamic": (LlamaForCausalLM, LlamaConfig(**LLAMA, rope_parameters={"rope_type": "dynamic",
                                                                               "rope_theta": 10000.0, "factor": 2.0})),
    "llama-yarn": (LlamaForCausalLM, LlamaConfig(
        **dict(LLAMA, hidden_size=64, num_attention_heads=4),
        rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
                         "original_max_position_embeddings": 16})),
    "llama-yarn-mscale": (LlamaForCausalLM, LlamaConfig(
        **dict(LLAMA, hidden_size=64, num_attention_heads=4),
        rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0, "mscale": 0.8,
                         "mscale_all_dim": 0.5, "beta_fast": 16, "beta_slow": 2, "truncate": False,
                         "original_max_position_embeddings": 16})),
    "mistral": (MistralForCausalLM, MistralConfig(**LLAMA, sliding_window=None)),
    "mistral-window-covers": (MistralForCausalLM, MistralConfig(**LLAMA, sliding_window=64)),
    "mistral-sliding-window": (MistralForCausalLM, MistralConfig(**LLAMA, sliding_window=5)),
    "qwen2-tied": (Qwen2ForCausalLM, Qwen2Config(**dict(LLAMA, tie_word_embeddings=True))),
    "qwen2-untied-window-off": (Qwen2ForCausalLM, Qwen2Config(**LLAMA, use_sliding_window=False, sliding_window=8)),
}

# name -> (model class, config, what the refusal must mention)
REFUSED = {
    # Layer 0 global, layer 1 sliding: no "every N-th layer global" pattern.
    "qwen2-sliding-window": (Qwen2ForCausalLM, Qwen2Config(**LLAMA, use_sliding_window=True, sliding_window=8,
                                                           max_window_layers=1), "layer_types"),
}


def check_provenance(provenance, origin, keys, what):
    """Each `key: value` line of `hftrain config --provenance` output comes from `origin`."""
    for key in keys:
        line = next((l for l in provenance.splitlines() if l.strip().startswith(key)), "")
        check(origin in line, f"{what}: `{key}` should come from {origin}: {line!r}")


def run(*args, **kw):
    return subprocess.run(list(args), check=True, capture_output=True, text=True, **kw).stdout


def perturb(model, seed):
    """Every parameter moved off its initial value (biases off zero, norms off one)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _, p in sorted(model.named_parameters()):
            p.add_(torch.randn(p.shape, generator=g) * 0.05)


def saved_names(model, grads):
    """The gradients under the names save_pretrained writes. transformers 5 holds a mixture of experts
    as 3-D tensors (mlp.experts.gate_up_proj (E, 2F, C): gate then up rows; mlp.experts.down_proj
    (E, C, F)) and saves them per expert: Qwen3-MoE as mlp.experts.E.{gate,up,down}_proj, Mixtral as
    block_sparse_moe.experts.E.{w1,w3,w2} beside block_sparse_moe.gate."""
    mixtral = model.config.model_type == "mixtral"
    out = {}
    for name, g in grads.items():
        m = re.match(r"(.*\.)mlp\.(experts\.(gate_up_proj|down_proj)|gate\.weight)$", name)
        if not m:
            out[name] = g
            continue
        base = m.group(1) + ("block_sparse_moe." if mixtral else "mlp.")
        if m.group(2) == "gate.weight":
            out[base + "gate.weight"] = g
            continue
        for e in range(g.shape[0]):
            x = f"{base}experts.{e}."
            if m.group(3) == "gate_up_proj":
                gate, up = g[e].chunk(2, 0)
                out[x + ("w1" if mixtral else "gate_proj") + ".weight"] = gate
                out[x + ("w3" if mixtral else "up_proj") + ".weight"] = up
            else:
                out[x + ("w2" if mixtral else "down_proj") + ".weight"] = g[e]
    return out


def reference(model, ids):
    """transformers' logits, loss and gradients (by saved parameter name) for `ids`, and for a mixture
    of experts the experts each layer's router chose per token (by layer number)."""
    model.eval()
    model.zero_grad()
    routing, hooks = {}, []
    for name, module in model.named_modules():
        if type(module).__name__.endswith("TopKRouter"):  # returns (logits, weights, indices)
            layer = int(re.search(r"layers\.(\d+)\.", name).group(1))
            hooks.append(module.register_forward_hook(
                lambda _m, _i, out, layer=layer: routing.__setitem__(layer, out[2].detach().clone())))
    out = model(input_ids=ids, labels=ids)
    for h in hooks:
        h.remove()
    out.loss.backward()
    grads = {name: p.grad.detach().clone() for name, p in model.named_parameters()}
    return out.logits.detach(), out.loss.detach(), saved_names(model, grads), routing


def compare(name, forward_bin, model_dir, work, model, ids):
    ids_file = os.path.join(work, name + "-ids.safetensors")
    out_file = os.path.join(work, name + "-out.safetensors")
    save_file({"input_ids": ids}, ids_file)
    run(forward_bin, model_dir, ids_file, out_file)
    ours = load_file(out_file)
    logits, loss, grads, routing = reference(model, ids)
    ours_routing = {int(re.search(r"layers\.(\d+)\.", k).group(1)): v for k, v in ours.items()
                    if k.startswith("experts.")}
    check(set(ours_routing) == set(routing), f"{name}: MoE layers differ: ours {sorted(ours_routing)}, "
                                             f"transformers' {sorted(routing)}")
    for layer in sorted(set(ours_routing) & set(routing)):
        check(torch.equal(ours_routing[layer], routing[layer]),
              f"{name}: layer {layer}'s router chose other experts than transformers' for "
              f"{(ours_routing[layer] != routing[layer]).any(-1).sum().item()} tokens")
    scale = logits.abs().max().item()
    diff = (ours["logits"] - logits).abs().max().item()
    check(scale > 0.5, f"{name}: logits too small to compare ({scale})")
    check(diff <= 1e-5, f"{name}: logits differ by {diff} (max |logit| {scale})")
    loss_diff = abs(ours["loss"].item() - loss.item())
    check(loss_diff <= 1e-5, f"{name}: loss {ours['loss'].item()} vs transformers' {loss.item()}")
    our_grads = {k[len("grad."):]: v for k, v in ours.items() if k.startswith("grad.")}
    check(set(our_grads) == set(grads), f"{name}: gradient names differ: only ours {sorted(set(our_grads) - set(grads))}, "
                                        f"only transformers' {sorted(set(grads) - set(our_grads))}")
    worst = 0.0
    for key in sorted(set(our_grads) & set(grads)):
        ref = grads[key]
        rel = (our_grads[key] - ref).abs().max().item() / max(ref.abs().max().item(), 1e-12)
        worst = max(worst, rel)
        check(rel <= 1e-4, f"{name}: gradient of {key} differs by {rel:.2e} of its largest value")
    chose = f", the routers' choices of {len(routing)} MoE layers equal" if routing else ""
    print(f"{name}: logits max |diff| {diff:.1e} (scale {scale:.2f}), loss {loss.item():.5f} diff {loss_diff:.1e}, "
          f"{len(grads)} gradients, worst relative diff {worst:.1e}{chose}")


def conformance(forward_bin, work):
    for i, (name, (cls, config)) in enumerate(CASES.items()):
        torch.manual_seed(i)
        model = cls(config)
        perturb(model, i)
        model_dir = os.path.join(work, name)
        model.save_pretrained(model_dir)
        ids = torch.randint(0, config.vocab_size, (2, 13), generator=torch.Generator().manual_seed(100 + i))
        compare(name, forward_bin, model_dir, work, model, ids)
        if name == "llama-gqa-untied":  # sharded save_pretrained: model-0000i-of-0000N + index
            sharded = os.path.join(work, name + "-sharded")
            model.save_pretrained(sharded, max_shard_size="20KB")
            shards = [f for f in os.listdir(sharded) if f.endswith(".safetensors")]
            check(len(shards) > 1 and os.path.exists(os.path.join(sharded, "model.safetensors.index.json")),
                  f"{name}: save_pretrained did not shard ({shards})")
            compare(name + "-sharded", forward_bin, sharded, work, model, ids)
    for name, (cls, config, needle) in REFUSED.items():
        model_dir = os.path.join(work, name)
        cls(config).save_pretrained(model_dir)
        ids_file = os.path.join(work, name + "-ids.safetensors")
        save_file({"input_ids": torch.zeros(1, 4, dtype=torch.int64)}, ids_file)
        p = subprocess.run([forward_bin, model_dir, ids_file, os.path.join(work, "x.safetensors")],
                           capture_output=True, text=True)
        check(p.returncode == 2 and needle in p.stderr, f"{name}: expected a refusal naming {needle}, got "
                                                        f"exit {p.returncode}: {p.stderr.strip()}")
        print(f"{name}: refused: {p.stderr.strip().splitlines()[0] if p.stderr.strip() else ''}")


def write_corpus(work):
    corpus = os.path.join(work, "corpus.txt")
    with open(corpus, "w", encoding="utf-8") as f:
        for i in range(200):
            f.write(f"The cat {i} sat on the mat. Hello world {i % 7}. Number {i}.\n%\n")
    return corpus


def losses_of(run_dir):
    with open(os.path.join(run_dir, "metrics.jsonl"), encoding="utf-8") as f:
        return [json.loads(line)["loss"] for line in f if '"loss"' in line]


def round_trips(forward_bin, hftrain, work):
    corpus = write_corpus(work)
    env = dict(os.environ, HFTRAIN_CACHE_DIR=os.path.join(work, "cache"))
    base = [f"data.train={corpus}", "data.separator='%'", "model.arch=llama", "model.n_layer=2", "model.n_head=4",
            "model.n_kv_head=2", "model.d_model=64", "model.d_ff=88", "model.max_seq_len=64", "data.seq_len=32",
            "model.vocab_size=300", "scheduler.warmup_steps=2", "optimizer.lr=0.01", "trainer.eval_every=0",
            "data.validation_fraction=0", "checkpoint.at_end=false", "trainer.log_every=1"]
    shapes = {
        "qwen2-shaped": (["model.attention_bias=qkv", "model.tie_embeddings=true"], "Qwen2ForCausalLM"),
        "rope-scaled": (["model.attention_bias=all", "model.mlp_bias=true", "model.rope_scaling.type=yarn",
                         "model.rope_scaling.factor=4", "model.rope_scaling.original_max_seq_len=16"],
                        "LlamaForCausalLM"),
        "llama3-scaled": (["model.rope_scaling.type=llama3", "model.rope_scaling.factor=8",
                           "model.rope_scaling.original_max_seq_len=16", "model.rope_theta=500000"],
                          "LlamaForCausalLM"),
    }
    for i, (name, (extra, arch)) in enumerate(shapes.items()):
        run_dir = os.path.join(work, "run-" + name)
        run(hftrain, "run", "quickstart", *base, *extra, "trainer.max_steps=5", f"run.output_dir={run_dir}", env=env)
        final = os.path.join(run_dir, "final")
        out = os.path.join(work, name + "-hf")
        run(hftrain, "export", final, "--hf", out, "--shard-size", "40KB")
        with open(os.path.join(out, "config.json"), encoding="utf-8") as f:
            config = json.load(f)
        check(config["architectures"] == [arch], f"{name}: exported as {config['architectures']}, expected {arch}")
        shards = sorted(f for f in os.listdir(out) if f.startswith("model-") and f.endswith(".safetensors"))
        check(len(shards) > 1 and os.path.exists(os.path.join(out, "model.safetensors.index.json")),
              f"{name}: export --shard-size 40KB wrote {shards}")
        model = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32)
        check(type(model).__name__ == arch, f"{name}: transformers loaded a {type(model).__name__}")
        ids = torch.randint(0, 300, (2, 21), generator=torch.Generator().manual_seed(200 + i))
        compare(name + " (hftrain's directory vs the export in transformers)", forward_bin, final, work, model, ids)
        compare(name + " (the export read back into hftrain)", forward_bin, out, work, model, ids)

    # A Qwen2 directory from save_pretrained (tied, q/k/v biases) trains on in hftrain.
    torch.manual_seed(7)
    config = Qwen2Config(vocab_size=300, hidden_size=64, intermediate_size=88, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                         rms_norm_eps=1e-6, tie_word_embeddings=True, rope_parameters={"rope_type": "default",
                                                                                       "rope_theta": 1000000.0})
    pretrained = os.path.join(work, "qwen2-pretrained")
    Qwen2ForCausalLM(config).save_pretrained(pretrained)
    tuned = os.path.join(work, "qwen2-tuned")
    run(hftrain, "run", "quickstart", *base, "model.attention_bias=qkv", "model.tie_embeddings=true",
        "model.rope_theta=1000000", "model.norm_eps=1e-6", "trainer.max_steps=30", f"model.from={pretrained}",
        f"run.output_dir={tuned}", env=env)
    losses = losses_of(tuned)
    check(len(losses) == 30 and abs(losses[0] - math.log(300)) < 0.5 and losses[-1] < losses[0] - 1.0,
          f"training on from a Qwen2 save_pretrained: losses {losses[:3]} ... {losses[-3:]}")
    print(f"from a Qwen2 save_pretrained: loss {losses[0]:.3f} (ln 300 = {math.log(300):.3f}) -> {losses[-1]:.3f}")

    # The shipped recipe that fine-tunes such a directory names only the directory: its config.json
    # gives the model.* values and its tokenizer.json the tokenizer (a byte-level BPE trained here).
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train([corpus], trainers.BpeTrainer(vocab_size=300, special_tokens=["<|endoftext|>"],
                                            initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok.save(os.path.join(pretrained, "tokenizer.json"))
    recipe = [f"model.from={pretrained}", f"data.train={corpus}", "data.separator='%'", "data.seq_len=32",
              "trainer.max_steps=20", "trainer.eval_every=10", "trainer.micro_batch_size=4", "optimizer.lr=0.003",
              "scheduler.warmup_steps=2", "trainer.log_every=1"]
    provenance = run(hftrain, "config", "finetune-hf", *recipe, "--provenance", env=env)
    origin = f"model.from {os.path.join(pretrained, 'config.json')}"
    check_provenance(provenance, origin,
                     ("n_layer: 2", "n_kv_head: 2", "attention_bias: qkv", "tie_embeddings: true", "type: hf"),
                     "finetune-hf")
    finetuned = os.path.join(work, "finetune-hf")
    run(hftrain, "run", "finetune-hf", *recipe, f"run.output_dir={finetuned}", env=env)
    losses = losses_of(finetuned)
    check(len(losses) == 20 and losses[-1] < losses[0], f"finetune-hf: losses {losses[:3]} ... {losses[-3:]}")
    exported = AutoModelForCausalLM.from_pretrained(os.path.join(finetuned, "final-hf"), dtype=torch.float32)
    check(type(exported).__name__ == "Qwen2ForCausalLM", f"finetune-hf exported a {type(exported).__name__}")
    print(f"recipe finetune-hf on the Qwen2 directory: loss {losses[0]:.3f} -> {losses[-1]:.3f}, final-hf loads")


def main():
    forward_bin, hftrain = sys.argv[1], sys.argv[2]
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="hftrain-hf-decoders-") as work:
        conformance(forward_bin, work)
        round_trips(forward_bin, hftrain, work)
    if failures:
        print(f"{len(failures)} failures", file=sys.stderr)
        return 1
    print("ok: hftrain's GPT-2, Llama (RoPE scaling), Mistral and Qwen2 equal transformers' logits, loss and gradients")
    return 0


if __name__ == "__main__":
    sys.exit(main())
