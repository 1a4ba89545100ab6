// model.json both ways: the ModelSpec saved beside the weights, versioned (1 to 4), each field checked
// when read back so that a damaged file is one CheckpointError naming it.
#include "model/spec.h"

#include <limits>
#include <tuple>

#include <nlohmann/json.hpp>

#include "util/error.h"
#include "util/json_depth.h"
#include "util/json_fields.h"

namespace hftrain::model {
namespace {

using config::AttentionBias;
using config::ModelArch;
using config::RopeType;

constexpr RopeType kRopeTypes[] = {RopeType::kDefault, RopeType::kLinear, RopeType::kDynamic,
                                   RopeType::kLlama3,  RopeType::kYarn,   RopeType::kLongrope};
constexpr AttentionBias kBiases[] = {AttentionBias::kNone, AttentionBias::kQkv, AttentionBias::kAll};
constexpr config::QkNorm kQkNorms[] = {config::QkNorm::kNone, config::QkNorm::kHead, config::QkNorm::kProjection};
constexpr config::Activation kActivations[] = {config::Activation::kSilu, config::Activation::kGeluTanh};
constexpr config::NormPlacement kPlacements[] = {config::NormPlacement::kPre, config::NormPlacement::kPost,
                                                 config::NormPlacement::kSandwich};

// The value of `values` whose name (`name_of`) is `text`, as model.json writes it; throws a
// CheckpointError naming `source` and `field` for any other text.
template <class E, size_t N, class NameOf>
E named(const std::string& text, const E (&values)[N], NameOf name_of, const std::string& source, const char* field) {
  for (E v : values) {
    if (text == name_of(v)) return v;
  }
  throw util::CheckpointError(source + ": unknown " + field + " '" + text + "'",
                              "the checkpoint is damaged; use another one");
}

}  // namespace

std::string ModelSpec::to_json() const {
  const RopeScaling r = normalized_rope(rope_scaling);
  nlohmann::ordered_json rope{{"type", rope_type_name(r.type)},
                              {"factor", r.factor},
                              {"original_max_seq_len", r.original_max_seq_len},
                              {"low_freq_factor", r.low_freq_factor},
                              {"high_freq_factor", r.high_freq_factor},
                              {"beta_fast", r.beta_fast},
                              {"beta_slow", r.beta_slow},
                              {"attention_factor", r.attention_factor},
                              {"truncate", r.truncate},
                              {"short_factor", r.short_factor},
                              {"long_factor", r.long_factor}};
  nlohmann::ordered_json j{{"format", "hftrain-model"},
                           {"version", 4},
                           {"arch", arch == ModelArch::kGpt2 ? "gpt2" : "llama"},
                           {"n_layer", n_layer},
                           {"n_head", n_head},
                           {"n_kv_head", n_kv_head},
                           {"d_model", d_model},
                           {"d_ff", d_ff},
                           {"max_seq_len", max_seq_len},
                           {"vocab_size", vocab_size},
                           {"rope_theta", rope_theta},
                           {"norm_eps", norm_eps},
                           {"dropout", dropout},
                           {"tie_embeddings", tie_embeddings},
                           {"init_std", init_std},
                           {"attention_bias", attention_bias_name(attention_biases())},
                           {"mlp_bias", mlp_biases()},
                           {"rope_scaling", rope},
                           // null: d_model / n_head
                           {"head_dim", explicit_head_dim > 0 ? nlohmann::ordered_json(explicit_head_dim) : nullptr},
                           {"qk_norm", qk_norm_name(qk_norm)},
                           {"norm_placement", norm_placement_name(norm_placement)},
                           {"partial_rotary_factor", partial_rotary_factor},
                           {"fused_projections", fused_projections},
                           {"activation", activation_name(activation)},
                           {"norm_unit_offset", norm_unit_offset},
                           {"scale_embeddings", scale_embeddings},
                           {"query_pre_attn_scalar", query_pre_attn_scalar},
                           {"attn_logit_softcapping", attn_logit_softcapping},
                           {"final_logit_softcapping", final_logit_softcapping},
                           {"sliding_window", sliding_window},
                           {"sliding_window_pattern", sliding_window_pattern},
                           {"rope_local_theta", rope_local_theta},
                           {"n_experts", n_experts},
                           {"experts_per_token", experts_per_token},
                           {"expert_d_ff", expert_d_ff},
                           {"moe_renormalize", moe_renormalize},
                           {"moe_every", moe_every},
                           {"shared_expert_d_ff", shared_expert_d_ff},
                           {"router_aux_loss_coef", router_aux_loss_coef}};
  if (score_outputs > 0) {  // a reward model's head and its padding id (absent: none)
    j["score_outputs"] = score_outputs;
    j["pad_token_id"] = pad_token_id;
  }
  return j.dump(2) + "\n";
}

ModelSpec ModelSpec::from_json(const std::string& text, const std::string& source) {
  const char* damaged = "the checkpoint is damaged; use another one";
  util::check_json_depth<util::CheckpointError>(text, source);
  try {
    const auto parsed = nlohmann::json::parse(text);
    if (!parsed.is_object() || !parsed.contains("format") || parsed.at("format") != "hftrain-model") {
      throw util::CheckpointError(source + " is not an hftrain model description (format is not hftrain-model)");
    }
    // Version 1 had no biases or RoPE-scaling fields, version 2 no head_dim or qk_norm, version 3
    // none of Gemma's options: the family defaults.
    const util::JsonFields j(parsed, util::JsonPlace::top(source, util::ErrorKind::kCheckpoint, damaged));
    const int version = static_cast<int>(j.integer("version", 1, std::numeric_limits<int>::max(), 1));
    if (version > 4) {
      throw util::CheckpointError(
          source + " is model description version " + std::to_string(version) + ", newer than this hftrain reads (4)",
          "use the hftrain that wrote it, or a newer one");
    }
    ModelSpec s;
    const std::string arch = j.string("arch");
    if (arch != "gpt2" && arch != "llama") throw util::CheckpointError(source + ": unknown arch '" + arch + "'");
    s.arch = arch == "gpt2" ? ModelArch::kGpt2 : ModelArch::kLlama;
    s.n_layer = j.integer("n_layer");
    s.n_head = j.integer("n_head");
    s.n_kv_head = j.integer("n_kv_head");
    s.d_model = j.integer("d_model");
    s.d_ff = j.integer("d_ff");
    s.max_seq_len = j.integer("max_seq_len");
    s.vocab_size = j.integer("vocab_size");
    s.rope_theta = j.number("rope_theta");
    s.norm_eps = j.number("norm_eps");
    s.dropout = j.number("dropout");
    s.tie_embeddings = j.boolean("tie_embeddings");
    s.init_std = j.number("init_std");
    s.score_outputs = j.integer("score_outputs", 0, 1 << 16, 0);
    s.pad_token_id = j.integer("pad_token_id", -1, std::numeric_limits<int32_t>::max(), -1);
    const bool gpt2 = s.arch == ModelArch::kGpt2;
    s.attention_bias = s.attention_biases();
    s.mlp_bias = s.mlp_biases();
    if (version >= 2) {
      s.attention_bias = named(j.string("attention_bias"), kBiases, attention_bias_name, source, "attention_bias");
      s.mlp_bias = j.boolean("mlp_bias");
      const util::JsonFields r = j.object("rope_scaling");
      s.rope_scaling.type = named(r.string("type"), kRopeTypes, rope_type_name, source, "rope_scaling type");
      s.rope_scaling.factor = r.number("factor");
      s.rope_scaling.original_max_seq_len = r.integer("original_max_seq_len");
      s.rope_scaling.low_freq_factor = r.number("low_freq_factor");
      s.rope_scaling.high_freq_factor = r.number("high_freq_factor");
      s.rope_scaling.beta_fast = r.number("beta_fast");
      s.rope_scaling.beta_slow = r.number("beta_slow");
      s.rope_scaling.attention_factor = r.number("attention_factor");
      s.rope_scaling.truncate = r.boolean("truncate");
      // Version 4 (longrope) on: one factor per rotated pair, or empty.
      if (r.has("short_factor")) s.rope_scaling.short_factor = r.positive_numbers("short_factor");
      if (r.has("long_factor")) s.rope_scaling.long_factor = r.positive_numbers("long_factor");
    }
    if (version >= 3 && j.has("head_dim")) {
      const int64_t head_dim = j.integer("head_dim");
      if (head_dim < 1 || head_dim > (int64_t{1} << 16)) {
        throw util::CheckpointError(source + ": head_dim is " + std::to_string(head_dim) +
                                        ", outside 1 to hftrain's limit of 65536 (model.head_dim)",
                                    damaged);
      }
      if (s.d_model % s.n_head != 0 || head_dim != s.d_model / s.n_head) s.explicit_head_dim = head_dim;
    }
    if (version >= 3) {
      s.qk_norm = named(j.string("qk_norm"), kQkNorms, qk_norm_name, source, "qk_norm");
      s.norm_placement =
          named(j.string("norm_placement", "pre"), kPlacements, norm_placement_name, source, "norm_placement");
      s.partial_rotary_factor = j.number("partial_rotary_factor", 1.0);
      s.fused_projections = j.boolean("fused_projections", false);
      if (!(s.partial_rotary_factor > 0 && s.partial_rotary_factor <= 1) || s.rotary_dim() < 2 ||
          s.rotary_dim() % 2 != 0) {
        throw util::CheckpointError(source + ": partial_rotary_factor " + std::to_string(s.partial_rotary_factor) +
                                        " leaves no even number of rotated dimensions",
                                    damaged);
      }
    }
    if (version >= 4) {
      s.activation = named(j.string("activation"), kActivations, activation_name, source, "activation");
      s.norm_unit_offset = j.boolean("norm_unit_offset");
      s.scale_embeddings = j.boolean("scale_embeddings");
      s.query_pre_attn_scalar = j.number("query_pre_attn_scalar");
      s.attn_logit_softcapping = j.number("attn_logit_softcapping");
      s.final_logit_softcapping = j.number("final_logit_softcapping");
      s.sliding_window = j.integer("sliding_window");
      s.sliding_window_pattern = j.integer("sliding_window_pattern");
      s.rope_local_theta = j.number("rope_local_theta");
      // MoE fields: absent in the first version-4 files (dense).
      s.n_experts = j.integer("n_experts", 0);
      s.experts_per_token = j.integer("experts_per_token", 0);
      s.expert_d_ff = j.integer("expert_d_ff", 0);
      s.moe_renormalize = j.boolean("moe_renormalize", true);
      s.moe_every = j.integer("moe_every", 1);
      s.shared_expert_d_ff = j.integer("shared_expert_d_ff", 0);
      s.router_aux_loss_coef = j.number("router_aux_loss_coef", 0.0);
      if (s.n_experts < 0 || s.n_experts > 1024 || !(s.router_aux_loss_coef >= 0) ||
          (s.n_experts > 0 && (s.experts_per_token < 1 || s.experts_per_token > s.n_experts || s.expert_d_ff < 1 ||
                               s.expert_d_ff > (int64_t{1} << 22) || s.moe_every < 1)) ||
          s.shared_expert_d_ff < 0 || s.shared_expert_d_ff > (int64_t{1} << 22) ||
          (s.n_experts == 0 && s.shared_expert_d_ff != 0)) {
        throw util::CheckpointError(source + ": inconsistent mixture-of-experts fields", damaged);
      }
      const bool sliding_fits = s.sliding_window > 0 || (s.sliding_window_pattern == 0 && s.rope_local_theta == 0);
      if (!(s.query_pre_attn_scalar >= 0 && s.attn_logit_softcapping >= 0 && s.final_logit_softcapping >= 0 &&
            s.sliding_window >= 0 && s.sliding_window_pattern >= 0 && s.rope_local_theta >= 0) ||
          !sliding_fits) {
        throw util::CheckpointError(source +
                                        ": a negative scale, cap or window, or sliding-layer fields without a "
                                        "sliding_window",
                                    damaged);
      }
    }
    // The limits of the model.* keys (config/keys_*.cpp): a model.json past them describes a model
    // that could never be allocated, refused before anything is.
    for (const auto& [key, value, limit] : {std::tuple<const char*, int64_t, int64_t>{"n_layer", s.n_layer, 1024},
                                            {"n_head", s.n_head, 1024},
                                            {"n_kv_head", s.n_kv_head, 1024},
                                            {"d_model", s.d_model, int64_t{1} << 20},
                                            {"d_ff", s.d_ff, int64_t{1} << 22},
                                            {"max_seq_len", s.max_seq_len, int64_t{1} << 24},
                                            {"vocab_size", s.vocab_size, int64_t{1} << 24}}) {
      if (value > limit) {
        throw util::CheckpointError(source + ": " + key + " is " + std::to_string(value) +
                                        ", above hftrain's limit of " + std::to_string(limit) + " (model." + key + ")",
                                    damaged);
      }
    }
    if (s.n_layer < 1 || s.n_head < 1 || s.n_kv_head < 1 || s.d_model < s.n_head || s.d_ff < 1 || s.max_seq_len < 1 ||
        s.vocab_size < 1 || s.n_head % s.n_kv_head != 0 || (s.explicit_head_dim == 0 && s.d_model % s.n_head != 0) ||
        (gpt2 && (s.attention_biases() != AttentionBias::kAll || !s.mlp_biases() || s.has_llama_options()))) {
      throw util::CheckpointError(source + ": inconsistent model sizes", damaged);
    }
    if (const auto problem = rope_problem(s)) {
      throw util::CheckpointError(source + ": rope_scaling does not fit (" + problem->key + ": " + problem->why + ")",
                                  damaged);
    }
    s.rope_scaling = normalized_rope(s.rope_scaling);
    return s;
  } catch (const nlohmann::json::exception& e) {
    throw util::CheckpointError(source + ": malformed model description (" + util::plain_json_error(e.what()) + ")",
                                damaged);
  }
}

}  // namespace hftrain::model
