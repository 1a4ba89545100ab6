// RoPE parameters in config.json, read (4.x rope_scaling, 5.x rope_parameters, Gemma 3's per layer
// type) and written.
#include <cmath>

#include "model/hf/hf_config_common.h"

namespace hftrain::model::hf {

using config::RopeType;

namespace {
// transformers' yarn attention factor: 0.1 * mscale * ln(scale) + 1 (1 for scale <= 1).
double yarn_mscale(double scale, double mscale) {
  return scale <= 1 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
}
}  // namespace

void read_rope(const Reader& r, ModelSpec& s) {
  s.rope_theta = r.number("rope_theta", 10000.0);
  s.partial_rotary_factor = r.number("partial_rotary_factor", 1.0);  // 4.x: top level; 5: rope_parameters
  const char* key = r.has("rope_scaling") ? "rope_scaling" : r.has("rope_parameters") ? "rope_parameters" : nullptr;
  if (!key) return;
  const Reader p = r.object(key);
  for (const auto& [layer, value] : p.json().items()) {
    unsupported_if(p, value.is_object(),
                   "`" + std::string(key) + "` holds RoPE parameters per layer type (" + layer + ")");
  }
  s.rope_theta = p.number("rope_theta", s.rope_theta);
  s.partial_rotary_factor = p.number("partial_rotary_factor", r.number("partial_rotary_factor", 1.0));
  unsupported_if(r, !(s.partial_rotary_factor > 0 && s.partial_rotary_factor <= 1),
                 "partial_rotary_factor " + std::to_string(s.partial_rotary_factor) + " outside (0, 1]");
  const std::string type = p.string("rope_type", p.string("type", "default"));
  RopeScaling& out = s.rope_scaling;
  // transformers takes a top-level original_max_position_embeddings over the one in the parameters.
  const int64_t original =
      r.positive("original_max_position_embeddings", p.positive("original_max_position_embeddings", s.max_seq_len));
  if (type == "default") {
    return;
  } else if (type == "linear" || type == "dynamic") {
    out.type = type == "linear" ? RopeType::kLinear : RopeType::kDynamic;
    out.factor = p.number("factor");
  } else if (type == "llama3") {
    out.type = RopeType::kLlama3;
    out.factor = p.number("factor");
    out.low_freq_factor = p.number("low_freq_factor");
    out.high_freq_factor = p.number("high_freq_factor");
    out.original_max_seq_len = original;
    unsupported_if(p, !(out.high_freq_factor > out.low_freq_factor && out.low_freq_factor > 0),
                   "llama3 RoPE scaling with low_freq_factor " + std::to_string(out.low_freq_factor) +
                       " and high_freq_factor " + std::to_string(out.high_freq_factor));
  } else if (type == "yarn") {
    out.type = RopeType::kYarn;
    out.original_max_seq_len = original;
    out.factor = p.number("factor", static_cast<double>(s.max_seq_len) / static_cast<double>(original));
    const double mscale = p.number("mscale", 0);
    const double mscale_all_dim = p.number("mscale_all_dim", 0);
    out.attention_factor =
        p.number("attention_factor", mscale != 0 && mscale_all_dim != 0
                                         ? yarn_mscale(out.factor, mscale) / yarn_mscale(out.factor, mscale_all_dim)
                                         : yarn_mscale(out.factor, 1));
    // transformers: `beta_fast or 32`, so 0 also means the default.
    out.beta_fast = p.number("beta_fast", 0) != 0 ? p.number("beta_fast") : 32.0;
    out.beta_slow = p.number("beta_slow", 0) != 0 ? p.number("beta_slow") : 1.0;
    out.truncate = p.boolean("truncate", true);
  } else if (type == "longrope" || type == "su") {  // "su": Phi-3's first name for it
    out.type = RopeType::kLongrope;
    out.original_max_seq_len = original;
    out.short_factor = p.positive_numbers("short_factor");
    out.long_factor = p.positive_numbers("long_factor");
    out.factor = p.number("factor", static_cast<double>(s.max_seq_len) / static_cast<double>(original));
    const double log_original = std::log(static_cast<double>(original));
    out.attention_factor = p.number(
        "attention_factor", out.factor > 1 && original > 1 ? std::sqrt(1 + std::log(out.factor) / log_original) : 1.0);
  } else {
    unsupported_if(r, true, "RoPE scaling type `" + type + "`");
  }
  unsupported_if(r, out.factor < 1, "a RoPE scaling factor below 1 (" + std::to_string(out.factor) + ")");
  unsupported_if(r, original > s.max_seq_len,
                 "original_max_position_embeddings " + std::to_string(original) + " above max_position_embeddings");
}

Json gemma3_rope(const Reader& r, ModelSpec& s) {
  Json j = r.json();
  s.rope_local_theta = r.number("rope_local_base_freq", 10000.0);
  if (!j.contains("rope_theta") || j.at("rope_theta").is_null()) j["rope_theta"] = 1e6;
  if (r.has("rope_parameters") && r.json().at("rope_parameters").is_object() &&
      r.json().at("rope_parameters").contains("full_attention")) {
    const Json& per_type = r.json().at("rope_parameters");
    const Json sliding_json =
        per_type.contains("sliding_attention") ? per_type.at("sliding_attention") : Json::object();
    const Reader sliding(sliding_json, r.at("rope_parameters") / "sliding_attention");
    if (sliding.json() == per_type.at("full_attention")) {
      s.rope_local_theta = 0;  // the sliding layers rotate as the full ones, scaling included
    } else {
      unsupported_if(sliding, sliding.string("rope_type", "default") != "default",
                     "`rope_parameters.sliding_attention` scales RoPE unlike `full_attention`");
      s.rope_local_theta = sliding.number("rope_theta", s.rope_local_theta);
    }
    j["rope_parameters"] = per_type.at("full_attention");
  }
  return j;
}

OrderedJson rope_json(const ModelSpec& s, bool theta) {
  const RopeScaling& r = s.rope_scaling;
  OrderedJson j{{"rope_type", rope_type_name(r.type)}};
  if (theta) j["rope_theta"] = s.rope_theta;
  if (theta && s.partial_rotary_factor != 1.0) j["partial_rotary_factor"] = s.partial_rotary_factor;
  if (r.type == RopeType::kDefault) return j;
  j["factor"] = r.factor;
  if (r.type == RopeType::kLlama3) {
    j["low_freq_factor"] = r.low_freq_factor;
    j["high_freq_factor"] = r.high_freq_factor;
  }
  if (r.type == RopeType::kLlama3 || r.type == RopeType::kYarn || r.type == RopeType::kLongrope) {
    j["original_max_position_embeddings"] = r.original_max_seq_len;
  }
  if (r.type == RopeType::kLongrope) {
    j["attention_factor"] = r.attention_factor;
    j["short_factor"] = r.short_factor;
    j["long_factor"] = r.long_factor;
  }
  if (r.type == RopeType::kYarn) {
    j["attention_factor"] = r.attention_factor;
    j["beta_fast"] = r.beta_fast;
    j["beta_slow"] = r.beta_slow;
    j["truncate"] = r.truncate;
  }
  return j;
}

}  // namespace hftrain::model::hf
