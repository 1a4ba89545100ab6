#include "model/hf_config.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include <nlohmann/json.hpp>

#include "util/error.h"
#include "util/json_depth.h"

namespace hftrain::model {
namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;
using config::AttentionBias;
using config::ModelArch;
using config::RopeType;

constexpr const char* kHint =
    "hftrain reads GPT2LMHeadModel, LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, "
    "Olmo2ForCausalLM, Phi3ForCausalLM, Gemma2ForCausalLM and Gemma3ForCausalLM configs (see README, Hugging Face "
    "models)";

// Reads the fields of one JSON object; `prefix` names nested objects in messages ("rope_parameters.").
struct Reader {
  const Json& j;
  const std::string& source;
  std::string prefix;

  [[noreturn]] void fail(const std::string& what, const std::string& hint = kHint) const {
    throw util::CheckpointError(source + ": " + what, hint);
  }
  std::string name(const char* key) const { return "`" + prefix + key + "`"; }
  bool has(const char* key) const { return j.contains(key) && !j.at(key).is_null(); }
  int64_t integer(const char* key) const {
    if (!has(key) || !j.at(key).is_number_integer() || j.at(key).get<int64_t>() <= 0) {
      fail(name(key) + " is missing or not a positive integer");
    }
    return j.at(key).get<int64_t>();
  }
  int64_t integer(const char* key, int64_t fallback) const { return has(key) ? integer(key) : fallback; }
  double number(const char* key) const {
    if (!has(key) || !j.at(key).is_number()) fail(name(key) + " is missing or not a number");
    return j.at(key).get<double>();
  }
  double number(const char* key, double fallback) const { return has(key) ? number(key) : fallback; }
  // A list of positive numbers (longrope's factors).
  std::vector<double> numbers(const char* key) const {
    if (!has(key) || !j.at(key).is_array()) fail(name(key) + " is missing or not a list of numbers");
    std::vector<double> out;
    for (const auto& v : j.at(key)) {
      if (!v.is_number() || !(v.get<double>() > 0)) fail(name(key) + " holds " + v.dump() + ", not a positive number");
      out.push_back(v.get<double>());
    }
    return out;
  }
  // A number that null turns off (0), and `fallback` when the key is absent (Gemma's soft-caps).
  double number_or_off(const char* key, double fallback) const {
    if (!j.contains(key)) return fallback;
    return j.at(key).is_null() ? 0.0 : number(key);
  }
  bool flag(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!j.at(key).is_boolean()) fail(name(key) + " is not true or false");
    return j.at(key).get<bool>();
  }
  std::string text(const char* key, const std::string& fallback) const {
    if (!has(key)) return fallback;
    if (!j.at(key).is_string()) fail(name(key) + " is not a string");
    return j.at(key).get<std::string>();
  }
  void unsupported_if(bool condition, const std::string& what) const {
    if (condition) fail(what + ", which hftrain's transformer does not implement");
  }
};

std::string number(double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v);  // the shortest text that reads back as v
  return std::string(buf, r.ptr);
}

// transformers' yarn attention factor: 0.1 * mscale * ln(scale) + 1 (1 for scale <= 1).
double yarn_mscale(double scale, double mscale) { return scale <= 1 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0; }

// RoPE theta and scaling. transformers 5 writes rope_parameters ({rope_type, rope_theta, factor,
// ...}); 4.x wrote rope_theta and rope_scaling ({type or rope_type, factor, ...}). transformers 5
// lets rope_scaling win when both are there, and so do we.
void read_rope(const Reader& r, ModelSpec& s) {
  s.rope_theta = r.number("rope_theta", 10000.0);
  s.partial_rotary_factor = r.number("partial_rotary_factor", 1.0);  // 4.x: top level; 5: rope_parameters
  const char* key = r.has("rope_scaling") ? "rope_scaling" : r.has("rope_parameters") ? "rope_parameters" : nullptr;
  if (!key) return;
  if (!r.j.at(key).is_object()) r.fail("`" + std::string(key) + "` is not an object");
  const Reader p{r.j.at(key), r.source, std::string(key) + "."};
  for (const auto& [layer, value] : p.j.items()) {
    p.unsupported_if(value.is_object(), "`" + std::string(key) + "` holds RoPE parameters per layer type (" + layer + ")");
  }
  s.rope_theta = p.number("rope_theta", s.rope_theta);
  s.partial_rotary_factor = p.number("partial_rotary_factor", r.number("partial_rotary_factor", 1.0));
  r.unsupported_if(!(s.partial_rotary_factor > 0 && s.partial_rotary_factor <= 1),
                   "partial_rotary_factor " + std::to_string(s.partial_rotary_factor) + " outside (0, 1]");
  const std::string type = p.text("rope_type", p.text("type", "default"));
  RopeScaling& out = s.rope_scaling;
  // transformers takes a top-level original_max_position_embeddings over the one in the parameters.
  const int64_t original =
      r.integer("original_max_position_embeddings", p.integer("original_max_position_embeddings", s.max_seq_len));
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
    p.unsupported_if(!(out.high_freq_factor > out.low_freq_factor && out.low_freq_factor > 0),
                     "llama3 RoPE scaling with low_freq_factor " + std::to_string(out.low_freq_factor) +
                         " and high_freq_factor " + std::to_string(out.high_freq_factor));
  } else if (type == "yarn") {
    out.type = RopeType::kYarn;
    out.original_max_seq_len = original;
    out.factor = p.number("factor", static_cast<double>(s.max_seq_len) / static_cast<double>(original));
    const double mscale = p.number("mscale", 0);
    const double mscale_all_dim = p.number("mscale_all_dim", 0);
    out.attention_factor = p.number("attention_factor", mscale != 0 && mscale_all_dim != 0
                                                            ? yarn_mscale(out.factor, mscale) / yarn_mscale(out.factor, mscale_all_dim)
                                                            : yarn_mscale(out.factor, 1));
    // transformers: `beta_fast or 32`, so 0 also means the default.
    out.beta_fast = p.number("beta_fast", 0) != 0 ? p.number("beta_fast") : 32.0;
    out.beta_slow = p.number("beta_slow", 0) != 0 ? p.number("beta_slow") : 1.0;
    out.truncate = p.flag("truncate", true);
  } else if (type == "longrope" || type == "su") {  // "su": Phi-3's first name for it
    out.type = RopeType::kLongrope;
    out.original_max_seq_len = original;
    out.short_factor = p.numbers("short_factor");
    out.long_factor = p.numbers("long_factor");
    out.factor = p.number("factor", static_cast<double>(s.max_seq_len) / static_cast<double>(original));
    const double log_original = std::log(static_cast<double>(original));
    out.attention_factor = p.number("attention_factor", out.factor > 1 && original > 1
                                                            ? std::sqrt(1 + std::log(out.factor) / log_original)
                                                            : 1.0);
  } else {
    r.unsupported_if(true, "RoPE scaling type `" + type + "`");
  }
  r.unsupported_if(out.factor < 1, "a RoPE scaling factor below 1 (" + std::to_string(out.factor) + ")");
  r.unsupported_if(original > s.max_seq_len, "original_max_position_embeddings " + std::to_string(original) +
                                                 " above max_position_embeddings");
}

enum class LlamaFamily { kLlama, kMistral, kQwen2, kQwen3, kOlmo2, kPhi3, kGemma2, kGemma3, kMixtral, kQwen3Moe };

// The dense family whose block a mixture-of-experts family keeps (Mixtral: Mistral's; Qwen3-MoE: Qwen3's).
LlamaFamily dense_block(LlamaFamily family) {
  return family == LlamaFamily::kMixtral ? LlamaFamily::kMistral : family == LlamaFamily::kQwen3Moe ? LlamaFamily::kQwen3 : family;
}

// Mixtral's and Qwen3-MoE's experts: how many, top-k, their size, renormalisation, which layers.
void read_experts(const Reader& r, ModelSpec& s, LlamaFamily family) {
  const bool mixtral = family == LlamaFamily::kMixtral;
  // transformers 5 writes num_local_experts for both; Qwen3-MoE's 4.x configs say num_experts.
  s.n_experts = r.integer("num_local_experts", r.integer("num_experts", mixtral ? 8 : 128));
  s.experts_per_token = r.integer("num_experts_per_tok", mixtral ? 2 : 8);
  s.expert_d_ff = mixtral ? s.d_ff : r.integer("moe_intermediate_size", 768);
  s.moe_renormalize = mixtral || r.flag("norm_topk_prob", false);
  s.moe_every = mixtral ? 1 : r.integer("decoder_sparse_step", 1);
  if (s.experts_per_token > s.n_experts) r.fail("`num_experts_per_tok` exceeds the number of experts");
  r.unsupported_if(r.has("mlp_only_layers") && !(r.j.at("mlp_only_layers").is_array() && r.j.at("mlp_only_layers").empty()),
                   "`mlp_only_layers` (dense layers named one by one)");
  r.unsupported_if(r.number("router_jitter_noise", 0) != 0, "router_jitter_noise");
  // transformers adds router_aux_loss_coef x the load-balancing loss to the training loss only when
  // output_router_logits is on.
  s.router_aux_loss_coef = r.flag("output_router_logits", false) ? r.number("router_aux_loss_coef", 0.001) : 0.0;
  r.unsupported_if(r.has("shared_expert_intermediate_size"), "shared experts");
}

// Which layers attend to a sliding window, as hftrain's pattern (ModelSpec::layer_slides): every
// layer (Mistral, Phi-3), those layer_types names (transformers 5), Qwen2's layers from
// max_window_layers on, or Gemma's alternation (every 2nd, every sliding_window_pattern-th layer
// global). A list no pattern describes is refused.
void read_sliding_window(const Reader& r, ModelSpec& s, LlamaFamily family) {
  const bool qwen = family == LlamaFamily::kQwen2 || family == LlamaFamily::kQwen3;
  const bool gemma = family == LlamaFamily::kGemma2 || family == LlamaFamily::kGemma3;
  if (family == LlamaFamily::kLlama || family == LlamaFamily::kOlmo2) return;  // no sliding layers
  if (qwen && !r.flag("use_sliding_window", false)) return;                      // Qwen ignores the window then
  if (!gemma && !r.has("sliding_window")) return;
  const int64_t window = gemma ? r.integer("sliding_window", 4096) : r.integer("sliding_window");
  std::vector<bool> slides(static_cast<size_t>(s.n_layer), true);
  if (r.has("layer_types")) {
    const Json& types = r.j.at("layer_types");
    if (!types.is_array() || static_cast<int64_t>(types.size()) != s.n_layer) {
      r.fail("`layer_types` is not a list of num_hidden_layers entries");
    }
    for (size_t i = 0; i < types.size(); ++i) {
      const bool sliding = types[i] == "sliding_attention";
      r.unsupported_if(!sliding && types[i] != "full_attention", "`layer_types` has " + types[i].dump());
      slides[i] = sliding;
    }
  } else if (qwen) {
    const Json& m = r.has("max_window_layers") ? r.j.at("max_window_layers") : Json(28);
    if (!m.is_number_integer() || m.get<int64_t>() < 0) r.fail("`max_window_layers` is not a whole number of layers");
    const int64_t first = m.get<int64_t>();
    for (int64_t i = 0; i < s.n_layer; ++i) slides[static_cast<size_t>(i)] = i >= first;
  } else if (gemma) {
    const int64_t every = family == LlamaFamily::kGemma2 ? 2 : r.integer("sliding_window_pattern", 6);
    for (int64_t i = 0; i < s.n_layer; ++i) slides[static_cast<size_t>(i)] = (i + 1) % every != 0;
  }
  const auto first_full = std::find(slides.begin(), slides.end(), false);
  if (first_full == slides.begin() && std::find(slides.begin(), slides.end(), true) == slides.end()) return;  // none
  s.sliding_window = window;
  s.sliding_window_pattern = first_full == slides.end() ? 0 : (first_full - slides.begin()) + 1;
  for (int64_t i = 0; i < s.n_layer; ++i) {
    if (s.layer_slides(i) != slides[static_cast<size_t>(i)]) {
      r.fail("its sliding layers (layer_types) do not repeat as every N-th layer global (hftrain's "
                 "model.sliding_window_pattern): layer " + std::to_string(i) + " breaks the pattern",
             "hftrain reads sliding windows on every layer, or on all layers but every N-th (Gemma)");
    }
  }
}

ModelSpec read_gpt2(const Reader& r) {
  ModelSpec s;
  s.arch = ModelArch::kGpt2;
  s.n_layer = r.integer("n_layer");
  s.n_head = r.integer("n_head");
  s.n_kv_head = s.n_head;
  s.d_model = r.integer("n_embd");
  s.d_ff = r.integer("n_inner", 4 * s.d_model);
  s.max_seq_len = r.integer("n_positions");
  s.vocab_size = r.integer("vocab_size");
  s.norm_eps = r.number("layer_norm_epsilon", 1e-5);
  s.tie_embeddings = r.flag("tie_word_embeddings", true);
  s.init_std = r.number("initializer_range", 0.02);
  s.attention_bias = AttentionBias::kAll;
  s.mlp_bias = true;
  const std::string act = r.text("activation_function", "gelu_new");
  r.unsupported_if(act != "gelu_new" && act != "gelu_pytorch_tanh", "activation_function is " + act);
  r.unsupported_if(r.flag("scale_attn_by_inverse_layer_idx", false), "scale_attn_by_inverse_layer_idx is on");
  r.unsupported_if(!r.flag("scale_attn_weights", true), "scale_attn_weights is off");
  return s;
}

// Gemma 3's RoPE: the full layers' parameters and theta (default 1e6), and the sliding layers' theta
// (rope_local_base_freq, default 10000; transformers 5: rope_parameters per layer type).
Json gemma3_rope(const Reader& r, ModelSpec& s) {
  Json j = r.j;
  s.rope_local_theta = r.number("rope_local_base_freq", 10000.0);
  if (!j.contains("rope_theta") || j.at("rope_theta").is_null()) j["rope_theta"] = 1e6;
  if (r.has("rope_parameters") && r.j.at("rope_parameters").is_object() &&
      r.j.at("rope_parameters").contains("full_attention")) {
    const Json& per_type = r.j.at("rope_parameters");
    const Reader sliding{per_type.contains("sliding_attention") ? per_type.at("sliding_attention") : Json::object(),
                         r.source, "rope_parameters.sliding_attention."};
    if (sliding.j == per_type.at("full_attention")) {
      s.rope_local_theta = 0;  // the sliding layers rotate as the full ones, scaling included
    } else {
      sliding.unsupported_if(!sliding.j.is_object() || sliding.text("rope_type", "default") != "default",
                             "`rope_parameters.sliding_attention` scales RoPE unlike `full_attention`");
      s.rope_local_theta = sliding.number("rope_theta", s.rope_local_theta);
    }
    j["rope_parameters"] = per_type.at("full_attention");
  }
  return j;
}

ModelSpec read_llama(const Reader& r, LlamaFamily moe_family) {
  const LlamaFamily family = dense_block(moe_family);
  ModelSpec s;
  s.arch = ModelArch::kLlama;
  s.n_layer = r.integer("num_hidden_layers");
  s.n_head = r.integer("num_attention_heads");
  s.n_kv_head = r.integer("num_key_value_heads", s.n_head);
  s.d_model = r.integer("hidden_size");
  s.d_ff = r.integer("intermediate_size");
  s.max_seq_len = r.integer("max_position_embeddings");
  s.vocab_size = r.integer("vocab_size");
  const bool gemma = family == LlamaFamily::kGemma2 || family == LlamaFamily::kGemma3;
  s.norm_eps = r.number("rms_norm_eps", family == LlamaFamily::kOlmo2 || family == LlamaFamily::kPhi3 ? 1e-5 : 1e-6);
  s.tie_embeddings = r.flag("tie_word_embeddings", gemma);
  s.init_std = r.number("initializer_range", 0.02);
  // Llama's attention_bias covers all four projections; Mistral has none; Qwen2 has q, k and v only.
  switch (family) {
    case LlamaFamily::kLlama:
      s.attention_bias = r.flag("attention_bias", false) ? AttentionBias::kAll : AttentionBias::kNone;
      s.mlp_bias = r.flag("mlp_bias", false);
      break;
    case LlamaFamily::kMistral:
      s.attention_bias = AttentionBias::kNone;
      s.mlp_bias = false;
      break;
    case LlamaFamily::kQwen2:
      s.attention_bias = AttentionBias::kQkv;
      s.mlp_bias = false;
      break;
    case LlamaFamily::kQwen3:  // attention_bias covers all four projections, as Llama's
      s.attention_bias = r.flag("attention_bias", false) ? AttentionBias::kAll : AttentionBias::kNone;
      s.mlp_bias = false;
      s.qk_norm = config::QkNorm::kHead;
      break;
    case LlamaFamily::kOlmo2:  // norms on the sublayers' outputs, q/k norms over the whole projections
      s.attention_bias = r.flag("attention_bias", false) ? AttentionBias::kAll : AttentionBias::kNone;
      s.mlp_bias = false;
      s.qk_norm = config::QkNorm::kProjection;
      s.norm_placement = config::NormPlacement::kPost;
      break;
    case LlamaFamily::kPhi3:  // Llama's block under fused names: qkv_proj, gate_up_proj
      s.attention_bias = AttentionBias::kNone;
      s.mlp_bias = false;
      s.fused_projections = true;
      break;
    case LlamaFamily::kGemma2:  // (1 + w) RMSNorms around both sublayers, GeGLU, scaled embeddings,
    case LlamaFamily::kGemma3:  // soft-caps (Gemma 2's on by default), per-head q/k norms (Gemma 3)
      s.attention_bias = r.flag("attention_bias", false) ? AttentionBias::kAll : AttentionBias::kNone;
      s.mlp_bias = false;
      s.norm_placement = config::NormPlacement::kSandwich;
      s.norm_unit_offset = true;
      s.scale_embeddings = true;
      s.activation = config::Activation::kGeluTanh;
      s.query_pre_attn_scalar = r.number("query_pre_attn_scalar", 256);
      s.final_logit_softcapping = r.number_or_off("final_logit_softcapping", family == LlamaFamily::kGemma2 ? 30.0 : 0.0);
      // Gemma 3's config has attn_logit_softcapping too, but transformers' Gemma3Attention never
      // applies it: read as transformers computes, without.
      if (family == LlamaFamily::kGemma2) s.attn_logit_softcapping = r.number_or_off("attn_logit_softcapping", 50.0);
      r.unsupported_if(r.flag("use_bidirectional_attention", false), "use_bidirectional_attention is on");
      if (family == LlamaFamily::kGemma3) s.qk_norm = config::QkNorm::kHead;
      break;
    case LlamaFamily::kMixtral:  // never: read as their dense block (dense_block), experts after
    case LlamaFamily::kQwen3Moe:
      break;
  }
  if (family == LlamaFamily::kGemma3) {
    const Json rope = gemma3_rope(r, s);
    read_rope(Reader{rope, r.source, ""}, s);
  } else {
    read_rope(r, s);
  }
  read_sliding_window(r, s, family);
  if (moe_family != family) read_experts(r, s, moe_family);
  if (s.sliding_window == 0) s.rope_local_theta = 0;  // no sliding layers to rotate otherwise
  if (s.rope_local_theta == s.rope_theta && s.rope_scaling.type == RopeType::kDefault) s.rope_local_theta = 0;
  // Gemma names the activation hidden_activation (gelu_pytorch_tanh); the others hidden_act (silu).
  const char* act_key = gemma ? "hidden_activation" : "hidden_act";
  const std::string act = r.text(act_key, gemma ? "gelu_pytorch_tanh" : "silu");
  r.unsupported_if(act != (gemma ? "gelu_pytorch_tanh" : "silu"), std::string(act_key) + " is " + act);
  // head_dim: transformers' default is hidden_size / num_attention_heads, but Qwen3Config's is
  // 128 and Gemma's 256.
  const int64_t derived = s.d_model % s.n_head == 0 ? s.d_model / s.n_head : 0;
  const int64_t head_dim =
      r.integer("head_dim", family == LlamaFamily::kQwen3 ? 128 : gemma ? 256 : derived);
  if (head_dim == 0) r.fail("`hidden_size` is not divisible by `num_attention_heads` and there is no `head_dim`");
  if (head_dim != derived) s.explicit_head_dim = head_dim;
  // What RoPE rotates must be pairs (an odd head_dim is fine when a partial factor leaves it even).
  r.unsupported_if(s.partial_rotary_factor > 1 || s.rotary_dim() < 2 || s.rotary_dim() % 2 != 0,
                   "RoPE would rotate " + std::to_string(s.rotary_dim()) + " dimensions of each head (head_dim " +
                       std::to_string(head_dim) + " x partial_rotary_factor " + number(s.partial_rotary_factor) +
                       "), not an even number (RoPE rotates pairs)");
  if (s.rope_scaling.type == RopeType::kLongrope) {
    const auto pairs = static_cast<size_t>(s.rotary_dim() / 2);
    for (const auto& [key, factors] : {std::pair<const char*, const std::vector<double>*>{"short_factor", &s.rope_scaling.short_factor},
                                       {"long_factor", &s.rope_scaling.long_factor}}) {
      if (factors->size() != pairs) {
        r.fail("longrope's `" + std::string(key) + "` has " + std::to_string(factors->size()) +
               " factors, but RoPE rotates " + std::to_string(pairs) + " pairs of each head");
      }
    }
  }
  return s;
}

// rope_parameters for `s` (transformers 5): the type and what it reads; `theta` adds rope_theta.
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

// The Llama-block families: <Name>ForCausalLM, <Name>Model or the model_type.
struct FamilyName {
  std::string name, model_type;
  LlamaFamily family;
};
const FamilyName kFamilies[] = {{"Llama", "llama", LlamaFamily::kLlama},    {"Mistral", "mistral", LlamaFamily::kMistral},
                                {"Qwen2", "qwen2", LlamaFamily::kQwen2},    {"Qwen3", "qwen3", LlamaFamily::kQwen3},
                                {"Olmo2", "olmo2", LlamaFamily::kOlmo2},    {"Phi3", "phi3", LlamaFamily::kPhi3},
                                {"Gemma2", "gemma2", LlamaFamily::kGemma2}, {"Gemma3", "gemma3_text", LlamaFamily::kGemma3},
                                {"Mixtral", "mixtral", LlamaFamily::kMixtral}, {"Qwen3Moe", "qwen3_moe", LlamaFamily::kQwen3Moe}};

const FamilyName& family_name(LlamaFamily family) {
  return *std::find_if(std::begin(kFamilies), std::end(kFamilies), [&](const FamilyName& f) { return f.family == family; });
}

[[noreturn]] void no_family(const std::string& what, const std::string& hint) {
  throw util::UsageError("no Hugging Face architecture hftrain writes has " + what, hint);
}

// The Hugging Face architecture that computes what `s` (a llama-family spec) computes; throws
// UsageError naming the combination none of them has.
LlamaFamily export_family(const ModelSpec& s) {
  if (s.n_experts > 0) {
    const bool qwen = s.qk_norm == config::QkNorm::kHead;
    const bool block_fits = s.norm_placement == config::NormPlacement::kPre && !s.fused_projections &&
                            s.partial_rotary_factor == 1.0 && !s.mlp_biases() && !s.norm_unit_offset &&
                            !s.scale_embeddings && s.activation == config::Activation::kSilu &&
                            s.attn_logit_softcapping == 0 && s.final_logit_softcapping == 0 &&
                            s.query_pre_attn_scalar == 0 && s.rope_local_theta == 0;
    const bool mixtral = !qwen && s.qk_norm == config::QkNorm::kNone && s.attention_biases() == AttentionBias::kNone &&
                         s.moe_renormalize && s.moe_every == 1 && s.sliding_window_pattern == 0;
    const bool qwen3_moe = qwen && s.attention_biases() != AttentionBias::kQkv;
    if (!block_fits || !(mixtral || qwen3_moe)) {
      no_family("this mixture of experts: Mixtral's is Mistral's block with every layer MoE and renormalised "
                "weights, Qwen3-MoE's is Qwen3's (model.qk_norm=head)",
                "export MoE models shaped as Mixtral (no biases, model.moe_every=1, model.moe_renormalize=true) or "
                "Qwen3-MoE (model.qk_norm=head)");
    }
    return qwen ? LlamaFamily::kQwen3Moe : LlamaFamily::kMixtral;
  }
  const bool biases_none_or_all = s.attention_biases() != AttentionBias::kQkv && !s.mlp_biases();
  const bool gemma_options = s.norm_unit_offset || s.scale_embeddings || s.activation != config::Activation::kSilu ||
                             s.query_pre_attn_scalar > 0 || s.attn_logit_softcapping > 0 ||
                             s.final_logit_softcapping > 0 || s.rope_local_theta > 0 ||
                             s.norm_placement == config::NormPlacement::kSandwich;
  if (gemma_options) {
    const bool whole = s.norm_unit_offset && s.scale_embeddings && s.activation == config::Activation::kGeluTanh &&
                       s.norm_placement == config::NormPlacement::kSandwich &&
                       s.qk_norm != config::QkNorm::kProjection && biases_none_or_all && !s.fused_projections &&
                       s.partial_rotary_factor == 1.0;
    if (!whole) {
      no_family("part of Gemma's block (model.norm_unit_offset, model.scale_embeddings, model.activation=gelu_tanh, "
                "model.norm_placement=sandwich, soft-caps, model.query_pre_attn_scalar, model.rope_local_theta) "
                "without the rest, or with biases, fused projections or a partial rotary factor",
                "export Gemma models with all of model.norm_unit_offset=true model.scale_embeddings=true "
                "model.activation=gelu_tanh model.norm_placement=sandwich, model.qk_norm none (Gemma 2) or head "
                "(Gemma 3), attention biases none or all and no MLP biases");
    }
    if (s.qk_norm == config::QkNorm::kHead) {
      if (s.attn_logit_softcapping > 0) {
        no_family("Gemma 3's block with attention soft-capping (transformers' Gemma 3 never applies "
                  "attn_logit_softcapping)",
                  "unset model.attn_logit_softcapping to export as Gemma 3, or model.qk_norm=none for Gemma 2");
      }
      return LlamaFamily::kGemma3;
    }
    if (s.rope_local_theta > 0) {
      no_family("Gemma 2's block with a RoPE base of the sliding layers' own (model.rope_local_theta)",
                "set model.qk_norm=head (Gemma 3), or unset model.rope_local_theta");
    }
    return LlamaFamily::kGemma2;
  }
  const bool qwen3 = s.qk_norm == config::QkNorm::kHead;
  const bool olmo2 = s.qk_norm == config::QkNorm::kProjection;
  if (s.fused_projections && (qwen3 || olmo2 || s.attention_biases() != AttentionBias::kNone || s.mlp_biases())) {
    no_family("fused q/k/v and gate/up tensors (Phi-3) with biases or q/k norms",
              "export models with model.fused_projections=true and no biases or q/k norms (Phi-3), or "
              "model.fused_projections=false");
  }
  if ((s.norm_placement == config::NormPlacement::kPost) != olmo2) {
    no_family(std::string("model.norm_placement=") + norm_placement_name(s.norm_placement) +
                  " with model.qk_norm=" + qk_norm_name(s.qk_norm),
              "export models with post-norms and q/k norms over the projections (OLMo 2), or pre-norms (Llama, "
              "Qwen2, Qwen3)");
  }
  if ((olmo2 || qwen3) && !biases_none_or_all) {
    no_family(std::string(olmo2 ? "OLMo 2's norms" : "per-head q/k norms (model.qk_norm=head, Qwen3)") + " with " +
                  (s.mlp_biases() ? "MLP biases" : "query/key/value biases alone"),
              "export models with model.attention_bias none or all and model.mlp_bias=false");
  }
  const bool qwen2 = !qwen3 && !olmo2 && s.attention_biases() == AttentionBias::kQkv;
  if (qwen2 && s.mlp_biases()) {
    no_family("query/key/value and MLP biases without output biases (model.attention_bias=qkv with "
              "model.mlp_bias=true)",
              "export models with attention_bias qkv and no MLP biases (Qwen2), or all and any (Llama)");
  }
  const LlamaFamily family = qwen3               ? LlamaFamily::kQwen3
                             : olmo2             ? LlamaFamily::kOlmo2
                             : s.fused_projections ? LlamaFamily::kPhi3
                             : qwen2             ? LlamaFamily::kQwen2
                                                 : LlamaFamily::kLlama;
  if (s.sliding_window == 0) return family;
  // Sliding windows: Qwen's on any layers, Mistral's and Phi-3's on all, OLMo 2 and Llama none
  // (a Llama without biases is a Mistral).
  if (family == LlamaFamily::kQwen2 || family == LlamaFamily::kQwen3) return family;
  const bool mistral = family == LlamaFamily::kLlama && s.attention_biases() == AttentionBias::kNone && !s.mlp_biases();
  if ((mistral || family == LlamaFamily::kPhi3) && s.sliding_window_pattern == 0) {
    return mistral ? LlamaFamily::kMistral : family;
  }
  no_family(std::string("a sliding window (model.sliding_window) ") +
                (s.sliding_window_pattern != 0 ? "on some layers only" : "") + " in " + family_name(family).name +
                "'s block",
            "Mistral and Phi-3 slide on every layer (model.sliding_window_pattern=0), Qwen2/Qwen3 and Gemma on any; "
            "unset model.sliding_window to export this model");
}

}  // namespace

ModelSpec spec_from_hf_config(const std::string& json_text, const std::string& source) {
  const Json j = util::parse_json<util::CheckpointError>(json_text, source);
  if (!j.is_object()) throw util::CheckpointError(source + " is not a JSON object", "is it a config.json?");
  const Reader r{j, source, ""};
  std::string arch;
  if (j.contains("architectures") && j["architectures"].is_array() && j["architectures"].size() == 1 &&
      j["architectures"][0].is_string()) {
    arch = j["architectures"][0].get<std::string>();
  } else {
    arch = r.text("model_type", "");
  }
  const auto family = std::find_if(std::begin(kFamilies), std::end(kFamilies), [&](const FamilyName& f) {
    return arch == f.name + "ForCausalLM" || arch == f.name + "Model" || arch == f.model_type;
  });
  ModelSpec s;
  if (arch == "GPT2LMHeadModel" || arch == "GPT2Model" || arch == "gpt2") {
    s = read_gpt2(r);
  } else if (family != std::end(kFamilies)) {
    s = read_llama(r, family->family);
  } else {
    r.fail("architecture `" + (arch.empty() ? std::string("(none)") : arch) + "` is not supported");
  }
  s.dropout = 0;
  if ((s.explicit_head_dim == 0 && s.d_model % s.n_head != 0) || s.n_head % s.n_kv_head != 0) {
    r.fail("the head counts do not divide the sizes");
  }
  return s;
}

std::string hf_config_json(const ModelSpec& s, const HfTokenIds& ids) {
  OrderedJson j;
  if (s.arch == ModelArch::kGpt2) {
    j = {{"architectures", {"GPT2LMHeadModel"}},
         {"model_type", "gpt2"},
         {"vocab_size", s.vocab_size},
         {"n_positions", s.max_seq_len},
         {"n_embd", s.d_model},
         {"n_layer", s.n_layer},
         {"n_head", s.n_head},
         {"n_inner", s.d_ff},
         {"activation_function", "gelu_new"},  // the tanh approximation, as blocks.cpp computes it
         {"layer_norm_epsilon", s.norm_eps},
         {"resid_pdrop", s.dropout},
         {"embd_pdrop", s.dropout},
         {"attn_pdrop", s.dropout},
         {"initializer_range", s.init_std}};
  } else {
    const LlamaFamily family = export_family(s);
    const FamilyName& name = family_name(family);
    const LlamaFamily block = dense_block(family);
    const bool qwen = block == LlamaFamily::kQwen2 || block == LlamaFamily::kQwen3;
    const bool gemma = block == LlamaFamily::kGemma2 || block == LlamaFamily::kGemma3;
    j = {{"architectures", {name.name + "ForCausalLM"}},
         {"model_type", name.model_type},
         {"vocab_size", s.vocab_size},
         {"max_position_embeddings", s.max_seq_len},
         {"hidden_size", s.d_model},
         {"intermediate_size", s.d_ff},
         {"num_hidden_layers", s.n_layer},
         {"num_attention_heads", s.n_head},
         {"num_key_value_heads", s.n_kv_head},
         {"head_dim", s.head_dim()},
         {gemma ? "hidden_activation" : "hidden_act", gemma ? "gelu_pytorch_tanh" : "silu"},
         {"rms_norm_eps", s.norm_eps},
         {"rope_theta", s.rope_theta},  // transformers 4.x
         {"partial_rotary_factor", s.partial_rotary_factor}};
    if (family == LlamaFamily::kGemma3) {  // 5.x: per layer type
      OrderedJson local = s.rope_local_theta > 0
                              ? OrderedJson{{"rope_type", "default"}, {"rope_theta", s.rope_local_theta}}
                              : rope_json(s, true);
      j["rope_parameters"] = {{"full_attention", rope_json(s, true)}, {"sliding_attention", local}};
      j["rope_local_base_freq"] = s.rope_local_theta > 0 ? s.rope_local_theta : s.rope_theta;  // 4.x
    } else {
      j["rope_parameters"] = rope_json(s, true);  // 5.x
    }
    if (s.rope_scaling.type != RopeType::kDefault) j["rope_scaling"] = rope_json(s, false);  // 4.x
    // Which layers slide: transformers 5 reads layer_types, Mistral and Phi-3 slide everywhere.
    OrderedJson layer_types = OrderedJson::array();
    for (int64_t i = 0; i < s.n_layer; ++i) layer_types.push_back(s.layer_slides(i) ? "sliding_attention" : "full_attention");
    const OrderedJson window = s.sliding_window > 0 ? OrderedJson(s.sliding_window) : OrderedJson(nullptr);
    if (qwen) {
      j["use_sliding_window"] = s.sliding_window > 0;
      j["sliding_window"] = window;
      j["max_window_layers"] = s.n_layer;
      if (s.sliding_window > 0) j["layer_types"] = layer_types;
    } else if (block == LlamaFamily::kMistral || family == LlamaFamily::kPhi3) {
      j["sliding_window"] = window;
    } else if (gemma) {
      j["sliding_window"] = window;
      j["layer_types"] = layer_types;
      // An integer in Gemma's configs (transformers checks the type).
      const double scalar = s.query_pre_attn_scalar > 0 ? s.query_pre_attn_scalar : static_cast<double>(s.head_dim());
      if (scalar != std::floor(scalar)) {
        no_family("a fractional query_pre_attn_scalar (" + number(scalar) + ")",
                  "export Gemma models with a whole model.query_pre_attn_scalar");
      }
      j["query_pre_attn_scalar"] = static_cast<int64_t>(scalar);
      const auto cap = [](double v) { return v > 0 ? OrderedJson(v) : OrderedJson(nullptr); };
      j["final_logit_softcapping"] = cap(s.final_logit_softcapping);
      j["attn_logit_softcapping"] = cap(s.attn_logit_softcapping);
    }
    if (family == LlamaFamily::kPhi3) {
      j["resid_pdrop"] = s.dropout;
      j["embd_pdrop"] = s.dropout;
      if (s.rope_scaling.type == RopeType::kLongrope) {  // Phi3Config reads it here too
        j["original_max_position_embeddings"] = s.rope_scaling.original_max_seq_len;
      }
    }
    if (block != LlamaFamily::kQwen2 && block != LlamaFamily::kMistral && family != LlamaFamily::kPhi3) {
      j["attention_bias"] = s.attention_biases() == AttentionBias::kAll;
    }
    if (family == LlamaFamily::kLlama) j["mlp_bias"] = s.mlp_biases();
    if (family == LlamaFamily::kMixtral) {  // intermediate_size is the experts' (every layer is MoE)
      j["intermediate_size"] = s.expert_d_ff;
      j["num_local_experts"] = s.n_experts;
      j["num_experts_per_tok"] = s.experts_per_token;
      j["router_jitter_noise"] = 0.0;
    } else if (family == LlamaFamily::kQwen3Moe) {
      j["num_experts"] = s.n_experts;  // 4.x's name, and 5's num_local_experts
      j["num_local_experts"] = s.n_experts;
      j["num_experts_per_tok"] = s.experts_per_token;
      j["moe_intermediate_size"] = s.expert_d_ff;
      j["norm_topk_prob"] = s.moe_renormalize;
      j["decoder_sparse_step"] = s.moe_every;
      j["mlp_only_layers"] = OrderedJson::array();
    }
    if (s.n_experts > 0) {  // the load-balancing loss, when training adds it
      j["output_router_logits"] = s.router_aux_loss_coef > 0;
      j["router_aux_loss_coef"] = s.router_aux_loss_coef > 0 ? s.router_aux_loss_coef : 0.001;
    }
    j["attention_dropout"] = s.dropout;
    j["initializer_range"] = s.init_std;
  }
  j["tie_word_embeddings"] = s.tie_embeddings;
  j["bos_token_id"] = ids.bos;
  j["eos_token_id"] = ids.eos;
  j["pad_token_id"] = ids.pad;
  j["torch_dtype"] = "float32";
  return j.dump(2) + "\n";
}

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
  if (s.qk_norm != config::QkNorm::kNone) out += std::string(" model.qk_norm=") + qk_norm_name(s.qk_norm);
  if (s.norm_placement != config::NormPlacement::kPre) {
    out += std::string(" model.norm_placement=") + norm_placement_name(s.norm_placement);
  }
  if (s.partial_rotary_factor != 1.0) out += " model.partial_rotary_factor=" + number(s.partial_rotary_factor);
  if (s.fused_projections) out += " model.fused_projections=true";
  if (s.activation != config::Activation::kSilu) out += std::string(" model.activation=") + activation_name(s.activation);
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
