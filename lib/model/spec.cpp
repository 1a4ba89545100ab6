#include "model/spec.h"

#include <algorithm>
#include <cmath>

#include "util/error.h"

namespace hftrain::model {
using config::AttentionBias;
using config::ModelArch;
using config::RopeType;

RopeScaling normalized_rope(const RopeScaling& r) {
  RopeScaling out;
  out.type = r.type;
  if (r.type == RopeType::kDefault) return out;
  out.factor = r.factor;
  if (r.type == RopeType::kLlama3 || r.type == RopeType::kYarn || r.type == RopeType::kLongrope) {
    out.original_max_seq_len = r.original_max_seq_len;
  }
  if (r.type == RopeType::kLlama3) {
    out.low_freq_factor = r.low_freq_factor;
    out.high_freq_factor = r.high_freq_factor;
  }
  if (r.type == RopeType::kYarn) {
    out.beta_fast = r.beta_fast;
    out.beta_slow = r.beta_slow;
    out.attention_factor = r.attention_factor;
    out.truncate = r.truncate;
  }
  if (r.type == RopeType::kLongrope) {
    out.attention_factor = r.attention_factor;
    out.short_factor = r.short_factor;
    out.long_factor = r.long_factor;
  }
  return out;
}

std::optional<RopeProblem> rope_problem(const ModelSpec& s) {
  const RopeScaling& r = s.rope_scaling;
  if (r.type == RopeType::kDefault) return std::nullopt;
  if (s.arch == ModelArch::kGpt2)
    return RopeProblem{"model.rope_scaling.type", "gpt2 has learned positions, no RoPE to scale"};
  if (!(r.factor >= 1)) return RopeProblem{"model.rope_scaling.factor", "the factor must be at least 1"};
  if ((r.type == RopeType::kLlama3 || r.type == RopeType::kYarn || r.type == RopeType::kLongrope) &&
      (r.original_max_seq_len < 1 || r.original_max_seq_len > s.max_seq_len)) {
    return RopeProblem{"model.rope_scaling.original_max_seq_len", "it must lie between 1 and model.max_seq_len"};
  }
  if (r.type == RopeType::kLongrope) {
    const auto pairs = static_cast<size_t>(s.rotary_dim() / 2);
    for (const auto& [key, factors] :
         {std::pair<const char*, const std::vector<double>*>{"model.rope_scaling.short_factor", &r.short_factor},
          {"model.rope_scaling.long_factor", &r.long_factor}}) {
      if (factors->size() != pairs) {
        return RopeProblem{key, "longrope needs one factor per rotated pair of each head: " + std::to_string(pairs) +
                                    ", not " + std::to_string(factors->size())};
      }
      for (double f : *factors) {
        if (!(f > 0) || !std::isfinite(f)) return RopeProblem{key, "every factor must be a positive number"};
      }
    }
  }
  if (r.type == RopeType::kLlama3 && !(r.high_freq_factor > r.low_freq_factor && r.low_freq_factor > 0)) {
    return RopeProblem{"model.rope_scaling.high_freq_factor", "llama3 needs high_freq_factor > low_freq_factor > 0"};
  }
  return std::nullopt;
}

const char* rope_type_name(RopeType type) {
  static const char* const kNames[] = {"default", "linear", "dynamic", "llama3", "yarn", "longrope"};
  return kNames[static_cast<size_t>(type)];
}

const char* attention_bias_name(AttentionBias bias) {
  static const char* const kNames[] = {"none", "qkv", "all"};
  return kNames[static_cast<size_t>(bias)];
}

const char* qk_norm_name(config::QkNorm norm) {
  static const char* const kNames[] = {"none", "head", "projection"};
  return kNames[static_cast<size_t>(norm)];
}

const char* norm_placement_name(config::NormPlacement placement) {
  static const char* const kNames[] = {"pre", "post", "sandwich"};
  return kNames[static_cast<size_t>(placement)];
}

const char* activation_name(config::Activation activation) {
  static const char* const kNames[] = {"silu", "gelu_tanh"};
  return kNames[static_cast<size_t>(activation)];
}

double ModelSpec::attention_scale() const {
  return 1.0 / std::sqrt(query_pre_attn_scalar > 0 ? query_pre_attn_scalar : static_cast<double>(head_dim()));
}

bool ModelSpec::has_llama_options() const {
  return explicit_head_dim > 0 || qk_norm != config::QkNorm::kNone || norm_placement != config::NormPlacement::kPre ||
         partial_rotary_factor != 1.0 || fused_projections || activation != config::Activation::kSilu ||
         norm_unit_offset || scale_embeddings || query_pre_attn_scalar != 0 || attn_logit_softcapping != 0 ||
         final_logit_softcapping != 0 || sliding_window != 0 || sliding_window_pattern != 0 || rope_local_theta != 0 ||
         n_experts != 0;
}

bool ModelSpec::same_shape(const ModelSpec& o) const {
  return arch == o.arch && n_layer == o.n_layer && n_head == o.n_head && n_kv_head == o.n_kv_head &&
         d_model == o.d_model && d_ff == o.d_ff && max_seq_len == o.max_seq_len && vocab_size == o.vocab_size &&
         tie_embeddings == o.tie_embeddings && norm_eps == o.norm_eps && attention_biases() == o.attention_biases() &&
         mlp_biases() == o.mlp_biases() && head_dim() == o.head_dim() && qk_norm == o.qk_norm &&
         norm_placement == o.norm_placement && rotary_dim() == o.rotary_dim() &&
         fused_projections == o.fused_projections && activation == o.activation &&
         norm_unit_offset == o.norm_unit_offset && scale_embeddings == o.scale_embeddings &&
         attention_scale() == o.attention_scale() && attn_logit_softcapping == o.attn_logit_softcapping &&
         final_logit_softcapping == o.final_logit_softcapping && sliding_window == o.sliding_window &&
         sliding_window_pattern == o.sliding_window_pattern && rope_local_theta == o.rope_local_theta &&
         n_experts == o.n_experts && experts_per_token == o.experts_per_token && expert_d_ff == o.expert_d_ff &&
         moe_renormalize == o.moe_renormalize && moe_every == o.moe_every &&
         shared_expert_d_ff == o.shared_expert_d_ff &&
         (arch == ModelArch::kGpt2 ||
          (rope_theta == o.rope_theta && normalized_rope(rope_scaling) == normalized_rope(o.rope_scaling)));
}

ModelSpec ModelSpec::from_config(const config::ModelConfig& c) {
  ModelSpec s;
  const bool gpt2 = c.arch == ModelArch::kGpt2;
  s.arch = c.arch;
  s.n_layer = c.n_layer;
  s.n_head = c.n_head;
  s.n_kv_head = c.n_kv_head.value_or(c.n_head);
  s.d_model = c.d_model;
  s.d_ff = c.d_ff.value_or(gpt2 ? 4 * c.d_model : (8 * c.d_model / 3 + 63) / 64 * 64);
  s.max_seq_len = c.max_seq_len;
  s.vocab_size = c.vocab_size;
  s.rope_theta = c.rope_theta;
  s.norm_eps = c.norm_eps.value_or(gpt2 ? 1e-5 : 1e-6);
  s.dropout = c.dropout;
  s.tie_embeddings = c.tie_embeddings.value_or(gpt2);
  s.init_std = c.init_std;
  s.attention_bias = s.attention_biases();
  s.mlp_bias = s.mlp_biases();
  if (c.attention_bias) s.attention_bias = *c.attention_bias;
  if (c.mlp_bias) s.mlp_bias = *c.mlp_bias;
  // Kept only where it differs from d_model / n_head, so that specs of one shape compare equal.
  if (c.head_dim && (c.d_model % c.n_head != 0 || *c.head_dim != c.d_model / c.n_head))
    s.explicit_head_dim = *c.head_dim;
  s.qk_norm = c.qk_norm;
  s.norm_placement = c.norm_placement;
  s.partial_rotary_factor = c.partial_rotary_factor;
  s.fused_projections = c.fused_projections;
  s.activation = c.activation;
  s.norm_unit_offset = c.norm_unit_offset;
  s.scale_embeddings = c.scale_embeddings;
  s.query_pre_attn_scalar = c.query_pre_attn_scalar.value_or(0);
  s.attn_logit_softcapping = c.attn_logit_softcapping.value_or(0);
  s.final_logit_softcapping = c.final_logit_softcapping.value_or(0);
  s.sliding_window = c.sliding_window.value_or(0);
  s.hf_family = c.hf_family;
  s.sliding_window_pattern = s.sliding_window > 0 ? c.sliding_window_pattern : 0;
  s.rope_local_theta = s.sliding_window > 0 ? c.rope_local_theta.value_or(0) : 0;
  if (c.n_experts > 0) {  // kept only for MoE models, so that dense specs of one shape compare equal
    s.n_experts = c.n_experts;
    s.experts_per_token = c.experts_per_token;
    s.expert_d_ff = c.expert_d_ff.value_or(s.d_ff);
    s.moe_renormalize = c.moe_renormalize;
    s.moe_every = c.moe_every;
    s.shared_expert_d_ff = c.shared_expert_d_ff;
    s.router_aux_loss_coef = c.router_aux_loss_coef;
  }
  if (s.n_experts > 0 && s.mlp_biases()) {
    throw util::ConfigError("model.n_experts with model.mlp_bias=true: the experts have no biases",
                            "set model.mlp_bias=false for a mixture of experts");
  }
  if (gpt2 && s.has_llama_options()) {
    throw util::ConfigError(
        "model.head_dim, model.qk_norm, model.norm_placement and the other llama-family "
        "options (see the config reference) are set, but model.arch=gpt2",
        "unset them, or use model.arch=llama");
  }
  if (gpt2 && (s.attention_biases() != AttentionBias::kAll || !s.mlp_biases())) {
    throw util::ConfigError(std::string("model.arch=gpt2 always has biases, but model.attention_bias=") +
                                attention_bias_name(s.attention_biases()) +
                                " model.mlp_bias=" + (s.mlp_biases() ? "true" : "false"),
                            "leave model.attention_bias and model.mlp_bias unset for gpt2, or use model.arch=llama");
  }
  const auto& r = c.rope_scaling;
  s.rope_scaling.type = r.type;
  s.rope_scaling.factor = r.factor;
  s.rope_scaling.original_max_seq_len = r.original_max_seq_len.value_or(c.max_seq_len);
  s.rope_scaling.low_freq_factor = r.low_freq_factor;
  s.rope_scaling.high_freq_factor = r.high_freq_factor;
  s.rope_scaling.beta_fast = r.beta_fast;
  s.rope_scaling.beta_slow = r.beta_slow;
  s.rope_scaling.truncate = r.truncate;
  s.rope_scaling.short_factor = r.short_factor;
  s.rope_scaling.long_factor = r.long_factor;
  if (r.type == RopeType::kLongrope) {
    // transformers: the factor, else max_position_embeddings / original_max_position_embeddings;
    // the attention factor sqrt(1 + ln(factor) / ln(original)), 1 for factor <= 1.
    const double original = static_cast<double>(s.rope_scaling.original_max_seq_len);
    s.rope_scaling.factor = r.factor > 1 ? r.factor : static_cast<double>(c.max_seq_len) / original;
    const double factor = s.rope_scaling.factor;
    s.rope_scaling.attention_factor = r.attention_factor.value_or(
        factor > 1 && original > 1 ? std::sqrt(1 + std::log(factor) / std::log(original)) : 1.0);
  } else {
    // transformers' default for yarn (get_mscale): 0.1 ln(factor) + 1, and 1 for factor <= 1.
    s.rope_scaling.attention_factor = r.attention_factor.value_or(r.factor > 1 ? 0.1 * std::log(r.factor) + 1.0 : 1.0);
  }
  if (const auto problem = rope_problem(s)) {
    throw util::ConfigError(
        problem->key + " does not fit model.rope_scaling.type=" + rope_type_name(r.type) + ": " + problem->why,
        "fix " + problem->key + ", or set model.rope_scaling.type=default");
  }
  s.rope_scaling = normalized_rope(s.rope_scaling);
  return s;
}

int64_t ModelSpec::block_parameter_count() const {
  int64_t largest = 0;
  for (int64_t i = 0; i < std::min<int64_t>(n_layer, n_experts > 0 ? moe_every : 1); ++i) {
    largest = std::max(largest, layer_parameter_count(i));
  }
  return largest;
}

int64_t ModelSpec::active_parameter_count() const {
  int64_t total = parameter_count();
  if (n_experts == 0) return total;
  const int64_t expert = 3 * d_model * expert_d_ff;  // gate, up, down
  for (int64_t i = 0; i < n_layer; ++i) {
    if (layer_is_moe(i)) total -= (n_experts - experts_per_token) * expert;
  }
  return total;
}

int64_t ModelSpec::layer_parameter_count(int64_t layer) const {
  const int64_t d = d_model, hd = head_dim();
  const int64_t norm = layer_norm() ? 2 * d : d;  // LayerNorm has a bias, RMSNorm not
  const int64_t qkv_out = (n_head + 2 * n_kv_head) * hd;
  const int64_t attention = d * qkv_out + (qkv_bias() ? qkv_out : 0) + n_head * hd * d + (o_bias() ? d : 0);
  const int64_t up_out = gated_mlp() ? 2 * d_ff : d_ff;
  const int64_t shared = shared_expert_d_ff > 0 ? 3 * d * shared_expert_d_ff + d : 0;  // its MLP and gate
  const int64_t mlp = layer_is_moe(layer) ? n_experts * d + n_experts * 3 * d * expert_d_ff + shared  // router, experts
                                          : d * up_out + d_ff * d + (mlp_biases() ? up_out + d : 0);
  const int64_t qk_norm_weights = qk_norm == config::QkNorm::kHead         ? 2 * hd
                                  : qk_norm == config::QkNorm::kProjection ? (n_head + n_kv_head) * hd
                                                                           : 0;
  const int64_t norms = (pre_norms() ? 2 * norm : 0) + (post_norms() ? 2 * norm : 0);
  return norms + attention + qk_norm_weights + mlp;
}

int64_t ModelSpec::root_parameter_count() const {
  int64_t total = vocab_size * d_model + (layer_norm() ? 2 * d_model : d_model);
  if (learned_positions()) total += max_seq_len * d_model;
  if (own_lm_head()) total += d_model * vocab_size;
  total += d_model * score_outputs;
  return total;
}

int64_t ModelSpec::parameter_count() const {
  int64_t total = root_parameter_count();
  for (int64_t i = 0; i < n_layer; ++i) total += layer_parameter_count(i);
  return total;
}

}  // namespace hftrain::model
