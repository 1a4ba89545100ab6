"""Emits tiny random Hugging Face models and their reference outputs for tests/model:

  tests/fixtures/tiny-gpt2/    GPT2LMHeadModel (tied embeddings), save_pretrained (safetensors)
  tests/fixtures/tiny-llama/   LlamaForCausalLM (GQA 4 heads / 2 KV heads, untied head, RoPE theta 500000)
  tests/fixtures/tiny-qwen2/   Qwen2ForCausalLM (q/k/v biases, tied head, GQA), parameters perturbed
  tests/fixtures/tiny-llama-scaled/  LlamaForCausalLM with llama3 RoPE scaling, attention and MLP
                               biases, tied head, parameters perturbed
  each with reference.json: input ids, logits and mean next-token loss from transformers (fp32).

Run: .venv/bin/python tests/conformance/gen_model_fixtures.py
"""
import json
import os

import torch
import transformers
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

HERE = os.path.dirname(__file__)
FIXTURES = os.path.join(HERE, "..", "fixtures")


def emit(name, model, vocab):
    torch.manual_seed(1)
    model.eval()
    ids = torch.randint(0, vocab, (2, 11))
    with torch.no_grad():
        out = model(input_ids=ids, labels=ids)
    folder = os.path.join(FIXTURES, name)
    model.save_pretrained(folder, safe_serialization=True)
    ref = {"transformers": transformers.__version__, "input_ids": ids.tolist(),
           "logits": [[[round(float(x), 7) for x in row] for row in b] for b in out.logits],
           "loss": float(out.loss)}
    with open(os.path.join(folder, "reference.json"), "w") as f:
        json.dump(ref, f)
    print(f"wrote {os.path.normpath(folder)} loss={float(out.loss):.6f}")


def perturb(model):
    """Biases off zero and norms off one, so that a wrong mapping shows in the logits."""
    g = torch.Generator().manual_seed(5)
    with torch.no_grad():
        for _, p in sorted(model.named_parameters()):
            p.add_(torch.randn(p.shape, generator=g) * 0.05)


def main():
    torch.manual_seed(0)
    gpt2 = GPT2LMHeadModel(GPT2Config(vocab_size=67, n_positions=32, n_embd=24, n_layer=2, n_head=4,
                                      resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0))
    emit("tiny-gpt2", gpt2, 67)
    torch.manual_seed(0)
    llama = LlamaForCausalLM(LlamaConfig(vocab_size=71, hidden_size=32, intermediate_size=56, num_hidden_layers=2,
                                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                         rope_theta=500000.0, rms_norm_eps=1e-5, tie_word_embeddings=False))
    emit("tiny-llama", llama, 71)
    torch.manual_seed(0)
    qwen2 = Qwen2ForCausalLM(Qwen2Config(vocab_size=73, hidden_size=32, intermediate_size=40, num_hidden_layers=2,
                                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=48,
                                         rms_norm_eps=1e-6, tie_word_embeddings=True,
                                         rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}))
    perturb(qwen2)
    emit("tiny-qwen2", qwen2, 73)
    torch.manual_seed(0)
    scaled = LlamaForCausalLM(LlamaConfig(vocab_size=61, hidden_size=32, intermediate_size=44, num_hidden_layers=2,
                                          num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64,
                                          rms_norm_eps=1e-5, tie_word_embeddings=True, attention_bias=True,
                                          mlp_bias=True,
                                          rope_parameters={"rope_type": "llama3", "rope_theta": 10000.0,
                                                           "factor": 8.0, "low_freq_factor": 1.0,
                                                           "high_freq_factor": 4.0,
                                                           "original_max_position_embeddings": 16}))
    perturb(scaled)
    emit("tiny-llama-scaled", scaled, 61)


if __name__ == "__main__":
    main()
