// The shape of a model with every family default filled in: what the transformer is built from,
// and what is saved next to the weights (model.json) for `generate` and `eval` to rebuild it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"

namespace hftrain::model {

// How a model's weights start: the family's random scheme (from torch's global generator; seed it
// first), or left as LibTorch's modules make them because every weight is loaded next (model.from:
// the loaders are strict, and drawing 124M numbers costs a second of start-up).
enum class WeightInit { kRandom, kSkip };

// RoPE scaling with every default resolved (transformers' rope_parameters, rope_type != default).
struct RopeScaling {
  config::RopeType type = config::RopeType::kDefault;
  double factor = 1;
  int64_t original_max_seq_len = 0;  // llama3, yarn, longrope
  double low_freq_factor = 1;        // llama3
  double high_freq_factor = 4;       // llama3
  double beta_fast = 32;             // yarn
  double beta_slow = 1;              // yarn
  double attention_factor = 1;       // yarn, longrope: cos and sin are scaled by this
  bool truncate = true;              // yarn
  std::vector<double> short_factor;  // longrope: frequency divisors up to original_max_seq_len
  std::vector<double> long_factor;   // longrope: past it

  bool operator==(const RopeScaling&) const = default;
};

struct ModelSpec {
  config::ModelArch arch = config::ModelArch::kGpt2;
  int64_t n_layer = 0;
  int64_t n_head = 0;
  int64_t n_kv_head = 0;
  int64_t d_model = 0;
  int64_t d_ff = 0;
  int64_t max_seq_len = 0;
  int64_t vocab_size = 0;
  double rope_theta = 10000;
  double norm_eps = 1e-5;
  double dropout = 0;
  bool tie_embeddings = true;
  // A score head of this many outputs in place of the output layer (0: none, a language model): a
  // reward model, transformers' *ForSequenceClassification `score` (no bias), read at each row's last
  // token that is not padding. Not part of the body's shape (same_shape): a language model's body
  // starts a reward model.
  int64_t score_outputs = 0;
  // A score head's padding id (transformers' config.pad_token_id, which it reads the last token
  // by): the run's tokenizer's, kept with the model so that its export scores where training did.
  // -1: none (a language model).
  int64_t pad_token_id = -1;
  double init_std = 0.02;
  // Biases; unset: the family's (gpt2: all and MLP, llama: none). Read them through
  // attention_biases() and mlp_biases().
  std::optional<config::AttentionBias> attention_bias;
  std::optional<bool> mlp_bias;
  RopeScaling rope_scaling;  // llama
  // llama: one head's size when it is not d_model / n_head (0: derived); read it through head_dim().
  int64_t explicit_head_dim = 0;
  config::QkNorm qk_norm = config::QkNorm::kNone;  // llama: q/k RMSNorm per head (Qwen3) or projection (OLMo 2)
  config::NormPlacement norm_placement = config::NormPlacement::kPre;  // llama: post (OLMo 2), sandwich (Gemma 2)
  double partial_rotary_factor = 1.0;  // llama: RoPE on the first rotary_dim() of each head
  bool fused_projections = false;      // llama: Hugging Face's qkv_proj and gate_up_proj tensors (Phi-3)
  // Gemma's options (llama): the gated MLP's activation, RMSNorm as x * (1 + w), embeddings times
  // sqrt(d_model), the attention scale, tanh soft-capping of attention scores and output logits
  // (0: none), sliding-window layers (window 0: none; every pattern-th layer global, 0: none) and
  // their own RoPE base (0: the global layers' RoPE).
  config::Activation activation = config::Activation::kSilu;
  bool norm_unit_offset = false;
  bool scale_embeddings = false;
  double query_pre_attn_scalar = 0;  // 0: head_dim
  double attn_logit_softcapping = 0;
  double final_logit_softcapping = 0;
  int64_t sliding_window = 0;
  int64_t sliding_window_pattern = 0;
  double rope_local_theta = 0;
  // The Hugging Face family an export names where the block fits more than one (model.hf_family;
  // a Mistral directory read). Not part of the shape.
  config::HfFamily hf_family = config::HfFamily::kAuto;
  // A mixture of experts in place of the MLP (Mixtral, Qwen3-MoE; llama): n_experts gated MLPs of
  // expert_d_ff, a router choosing experts_per_token of them per token, its top-k weights
  // renormalised or not; layers N, 2N, ... (moe_every) are MoE, the others dense MLPs of d_ff.
  int64_t n_experts = 0;
  int64_t experts_per_token = 0;
  int64_t expert_d_ff = 0;
  bool moe_renormalize = true;
  int64_t moe_every = 1;
  int64_t shared_expert_d_ff = 0;  // a gated MLP every token passes, scaled by sigmoid(gate . x) (Qwen2-MoE); 0: none
  double router_aux_loss_coef = 0;  // training adds this x the load-balancing loss (not a shape)

  // The family's choices (what makes GPT-2 GPT-2 and Llama Llama).
  bool learned_positions() const { return arch == config::ModelArch::kGpt2; }  // else RoPE
  bool layer_norm() const { return arch == config::ModelArch::kGpt2; }         // else RMSNorm
  bool gated_mlp() const { return arch == config::ModelArch::kLlama; }         // SwiGLU, else GELU
  config::AttentionBias attention_biases() const {
    return attention_bias.value_or(arch == config::ModelArch::kGpt2 ? config::AttentionBias::kAll
                                                                    : config::AttentionBias::kNone);
  }
  bool mlp_biases() const { return mlp_bias.value_or(arch == config::ModelArch::kGpt2); }
  bool pre_norms() const { return norm_placement != config::NormPlacement::kPost; }
  bool post_norms() const { return norm_placement != config::NormPlacement::kPre; }
  bool qkv_bias() const { return attention_biases() != config::AttentionBias::kNone; }
  bool o_bias() const { return attention_biases() == config::AttentionBias::kAll; }
  int64_t head_dim() const { return explicit_head_dim > 0 ? explicit_head_dim : d_model / n_head; }
  // Whether layer i (from 0) attends to a sliding window rather than to every earlier position.
  bool layer_slides(int64_t i) const {
    return sliding_window > 0 && (sliding_window_pattern == 0 || (i + 1) % sliding_window_pattern != 0);
  }
  // Whether layer i (from 0) is a mixture of experts.
  bool layer_is_moe(int64_t i) const { return n_experts > 0 && (i + 1) % moe_every == 0; }
  // The parameters one token passes through: every expert counted as experts_per_token of them.
  int64_t active_parameter_count() const;
  // Whether sliding layers rotate with their own base (rope_local_theta, no scaling).
  bool local_rope() const { return sliding_window > 0 && rope_local_theta > 0; }
  // The attention scores' scale: query_pre_attn_scalar^-1/2, else head_dim^-1/2.
  double attention_scale() const;
  // Whether any option beyond GPT-2's is set (gpt2 has none of them).
  bool has_llama_options() const;
  // The rotated part of a head (transformers: int(head_dim * partial_rotary_factor)).
  int64_t rotary_dim() const {
    return static_cast<int64_t>(static_cast<double>(head_dim()) * partial_rotary_factor);
  }

  // Everything that decides the parameters and what the model computes (not dropout or init_std).
  bool same_shape(const ModelSpec& other) const;
  // How many parameters the transformer built from this spec has, without building it (what
  // `hftrain plan` needs for models that would not fit in host memory).
  int64_t parameter_count() const;
  // Of these, the largest block's (a mixture of experts' where there is one), and the root's
  // (embeddings, final norm, untied head): the units zero3 gathers one at a time (parameter_units.h).
  int64_t block_parameter_count() const;
  int64_t layer_parameter_count(int64_t layer) const;
  int64_t root_parameter_count() const;
  // An output layer of its own: untied and not a score head.
  bool own_lm_head() const { return score_outputs == 0 && !tie_embeddings; }

  // Throws ConfigError naming the model.* keys for a combination the family cannot have (gpt2
  // without biases or with RoPE scaling, an original_max_seq_len above max_seq_len, ...).
  static ModelSpec from_config(const config::ModelConfig& config);
  // model.json (model_json.cpp).
  std::string to_json() const;
  // Throws CheckpointError naming `source` for a missing or malformed field.
  static ModelSpec from_json(const std::string& text, const std::string& source);
};

// Only the fields rope_scaling's type reads; the others keep RopeScaling's defaults, so that two
// specs that compute the same tables compare equal.
RopeScaling normalized_rope(const RopeScaling& r);

// What in a spec's rope_scaling does not fit its model: the model.* key and why. from_config reports it
// as a ConfigError, from_json as a CheckpointError.
struct RopeProblem {
  std::string key, why;
};
std::optional<RopeProblem> rope_problem(const ModelSpec& s);

// "default", "linear", ... (the rope_type names of transformers, and model.rope_scaling.type's).
const char* rope_type_name(config::RopeType type);
// "none", "qkv", "all" (model.attention_bias's choices).
const char* attention_bias_name(config::AttentionBias bias);
// "none", "head", "projection" (model.qk_norm's choices).
const char* qk_norm_name(config::QkNorm norm);
// "pre", "post", "sandwich" (model.norm_placement's choices).
const char* norm_placement_name(config::NormPlacement placement);
// "silu", "gelu_tanh" (model.activation's choices).
const char* activation_name(config::Activation activation);

}  // namespace hftrain::model
