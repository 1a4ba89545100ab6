// Hugging Face config.json both ways, for the architectures hftrain's transformer computes exactly:
// GPT2LMHeadModel, LlamaForCausalLM (attention and MLP biases, RoPE scaling), MistralForCausalLM
// (a sliding window on every layer), Qwen2ForCausalLM (query/key/value biases), Qwen3ForCausalLM
// (per-head q/k RMSNorm), Olmo2ForCausalLM (post-norms, q/k RMSNorm over the projections),
// Phi3ForCausalLM (fused tensors, partial rotary factor), Gemma2ForCausalLM and Gemma3ForCausalLM
// ((1 + w) RMSNorms before and after each sublayer, GeGLU, scaled embeddings, soft-capping,
// sliding layers alternating with global ones, Gemma 3's q/k norms and local RoPE base),
// MixtralForCausalLM, Qwen2MoeForCausalLM (a shared expert) and Qwen3MoeForCausalLM (mixtures of
// experts, with the load-balancing loss where output_router_logits is on); any of them with a head_dim that is not
// hidden_size / num_attention_heads; and each family's *ForSequenceClassification (GPT-2's, Gemma 3's
// Gemma3TextForSequenceClassification), a reward model's score head (ModelSpec::score_outputs).
// Anything else is refused with what differs.
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

// config.json for `spec`: GPT2LMHeadModel; for llama, Gemma2/Gemma3ForCausalLM with Gemma's block
// (without / with per-head q/k norms), Qwen3ForCausalLM with per-head q/k norms,
// Olmo2ForCausalLM with post-norms and q/k norms over the projections, Phi3ForCausalLM with fused
// projections, MixtralForCausalLM / Qwen3MoeForCausalLM for experts without / with q/k norms,
// Qwen2MoeForCausalLM for experts with a shared expert,
// Qwen2ForCausalLM when only the query/key/value projections have biases,
// MistralForCausalLM for a Llama with a sliding window, else LlamaForCausalLM; with a score head the
// family's *ForSequenceClassification and its id2label. RoPE scaling goes into rope_parameters
// (transformers 5) and rope_scaling + rope_theta (4.x). spec_from_hf_config reads it back to
// `spec` (but dropout and init_std). Throws UsageError for a spec no Hugging Face architecture
// holds (query/key/value biases with MLP biases).
std::string hf_config_json(const ModelSpec& spec, const HfTokenIds& ids);

// The model.* overrides that give `spec`'s shape ("model.arch=llama model.n_layer=2 ...").
std::string shape_overrides(const ModelSpec& spec);

}  // namespace hftrain::model
