// Hugging Face config.json both ways, for the architectures hftrain's transformer computes exactly:
// GPT2LMHeadModel, LlamaForCausalLM (attention and MLP biases, RoPE scaling), MistralForCausalLM,
// Qwen2ForCausalLM (query/key/value biases), Qwen3ForCausalLM (per-head q/k RMSNorm) and
// Olmo2ForCausalLM (post-norms, q/k RMSNorm over the projections), whose
// sliding window, if any, covers every position; any of them with a head_dim that is not
// hidden_size / num_attention_heads (Mistral-NeMo, Qwen3). Anything else is refused with what differs.
#pragma once

#include <cstdint>
#include <string>

#include "model/spec.h"

namespace hftrain::model {

// Throws CheckpointError naming `source` and the field for a missing or malformed field, an
// unsupported architecture or an option hftrain does not implement.
ModelSpec spec_from_hf_config(const std::string& json_text, const std::string& source);

// The special token ids a config.json names.
struct HfTokenIds {
  int64_t bos = 0;
  int64_t eos = 0;
  int64_t pad = 0;
};

// config.json for `spec`: GPT2LMHeadModel; for llama, Qwen3ForCausalLM with per-head q/k norms,
// Olmo2ForCausalLM with post-norms and q/k norms over the projections, Qwen2ForCausalLM when only
// the query/key/value projections have biases, else LlamaForCausalLM. RoPE scaling goes into rope_parameters
// (transformers 5) and rope_scaling + rope_theta (4.x). spec_from_hf_config reads it back to
// `spec` (but dropout and init_std). Throws UsageError for a spec no Hugging Face architecture
// holds (query/key/value biases with MLP biases).
std::string hf_config_json(const ModelSpec& spec, const HfTokenIds& ids);

// The model.* overrides that give `spec`'s shape ("model.arch=llama model.n_layer=2 ...").
std::string shape_overrides(const ModelSpec& spec);

}  // namespace hftrain::model
