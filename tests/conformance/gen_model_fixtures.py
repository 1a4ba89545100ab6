"""Emits tiny random Hugging Face models and their reference outputs for tests/model:

  tests/fixtures/tiny-gpt2/    GPT2LMHeadModel (tied embeddings), save_pretrained (safetensors)
  tests/fixtures/tiny-llama/   LlamaForCausalLM (GQA 4 heads / 2 KV heads, untied head, RoPE theta 500000)
  each with reference.json: input ids, logits and mean next-token loss from transformers (fp32).

Run: .venv/bin/python tests/conformance/gen_model_fixtures.py
"""
import json
import os

import torch
import transformers
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

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


if __name__ == "__main__":
    main()
