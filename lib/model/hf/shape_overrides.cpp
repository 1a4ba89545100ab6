#include "model/hf/hf_config.h"
#include "model/hf/hf_config_common.h"

namespace hftrain::model {

using config::ModelArch;
using config::RopeType;
using hf::number;

std::string shape_overrides(const ModelSpec& s) {
  std::string out = std::string("model.arch=") + (s.arch == ModelArch::kGpt2 ? "gpt2" : "llama") +
                    " model.n_layer=" + std::to_string(s.n_layer) + " model.n_head=" + std::to_string(s.n_head) +
                    " model.n_kv_head=" + std::to_string(s.n_kv_head) + " model.d_model=" + std::to_string(s.d_model) +
                    " model.d_ff=" + std::to_string(s.d_ff) + " model.max_seq_len=" + std::to_string(s.max_seq_len) +
                    " model.vocab_size=" + std::to_string(s.vocab_size) +
                    " model.tie_embeddings=" + (s.tie_embeddings ? "true" : "false");
  out += " model.norm_eps=" + number(s.norm_eps);
  if (s.arch == ModelArch::kGpt2) return out;  // biases fixed, no RoPE
  out += std::string(" model.attention_bias=") + attention_bias_name(s.attention_biases()) +
         " model.mlp_bias=" + (s.mlp_biases() ? "true" : "false");
  if (s.explicit_head_dim > 0) out += " model.head_dim=" + std::to_string(s.explicit_head_dim);
  if (s.hf_family == config::HfFamily::kMistral) out += " model.hf_family=mistral";
  if (s.qk_norm != config::QkNorm::kNone) out += std::string(" model.qk_norm=") + qk_norm_name(s.qk_norm);
  if (s.norm_placement != config::NormPlacement::kPre) {
    out += std::string(" model.norm_placement=") + norm_placement_name(s.norm_placement);
  }
  if (s.partial_rotary_factor != 1.0) out += " model.partial_rotary_factor=" + number(s.partial_rotary_factor);
  if (s.fused_projections) out += " model.fused_projections=true";
  if (s.activation != config::Activation::kSilu)
    out += std::string(" model.activation=") + activation_name(s.activation);
  if (s.norm_unit_offset) out += " model.norm_unit_offset=true";
  if (s.scale_embeddings) out += " model.scale_embeddings=true";
  if (s.query_pre_attn_scalar > 0) out += " model.query_pre_attn_scalar=" + number(s.query_pre_attn_scalar);
  if (s.attn_logit_softcapping > 0) out += " model.attn_logit_softcapping=" + number(s.attn_logit_softcapping);
  if (s.final_logit_softcapping > 0) out += " model.final_logit_softcapping=" + number(s.final_logit_softcapping);
  if (s.sliding_window > 0) {
    out += " model.sliding_window=" + std::to_string(s.sliding_window) +
           " model.sliding_window_pattern=" + std::to_string(s.sliding_window_pattern);
  }
  if (s.rope_local_theta > 0) out += " model.rope_local_theta=" + number(s.rope_local_theta);
  if (s.n_experts > 0) {
    out += " model.n_experts=" + std::to_string(s.n_experts) + " model.experts_per_token=" +
           std::to_string(s.experts_per_token) + " model.expert_d_ff=" + std::to_string(s.expert_d_ff) +
           " model.moe_renormalize=" + (s.moe_renormalize ? "true" : "false") +
           " model.moe_every=" + std::to_string(s.moe_every) +
           " model.shared_expert_d_ff=" + std::to_string(s.shared_expert_d_ff) +
           " model.router_aux_loss_coef=" + number(s.router_aux_loss_coef);
  }
  out += " model.rope_theta=" + number(s.rope_theta);
  const RopeScaling& r = s.rope_scaling;
  out += std::string(" model.rope_scaling.type=") + rope_type_name(r.type);
  if (r.type == RopeType::kDefault) return out;
  out += " model.rope_scaling.factor=" + number(r.factor);
  if (r.type == RopeType::kLlama3 || r.type == RopeType::kYarn) {
    out += " model.rope_scaling.original_max_seq_len=" + std::to_string(r.original_max_seq_len);
  }
  if (r.type == RopeType::kLlama3) {
    out += " model.rope_scaling.low_freq_factor=" + number(r.low_freq_factor) +
           " model.rope_scaling.high_freq_factor=" + number(r.high_freq_factor);
  }
  if (r.type == RopeType::kLongrope) {
    // Lists without spaces: the overrides are one word each.
    const auto list = [](const std::vector<double>& v) {
      std::string t = "[";
      for (size_t i = 0; i < v.size(); ++i) t += (i ? "," : "") + number(v[i]);
      return t + "]";
    };
    out += " model.rope_scaling.original_max_seq_len=" + std::to_string(r.original_max_seq_len) +
           " model.rope_scaling.attention_factor=" + number(r.attention_factor) +
           " model.rope_scaling.short_factor=" + list(r.short_factor) +
           " model.rope_scaling.long_factor=" + list(r.long_factor);
  }
  if (r.type == RopeType::kYarn) {
    out += " model.rope_scaling.beta_fast=" + number(r.beta_fast) + " model.rope_scaling.beta_slow=" +
           number(r.beta_slow) + " model.rope_scaling.attention_factor=" + number(r.attention_factor) +
           " model.rope_scaling.truncate=" + (r.truncate ? "true" : "false");
  }
  return out;
}

}  // namespace hftrain::model
