#include "model/hf_config.h"

#include <charconv>

#include <nlohmann/json.hpp>

#include "util/error.h"

namespace hftrain::model {
namespace {

using Json = nlohmann::json;

struct Reader {
  const Json& j;
  const std::string& source;

  [[noreturn]] void fail(const std::string& what) const {
    throw util::CheckpointError(source + ": " + what, "hftrain reads GPT2LMHeadModel, LlamaForCausalLM and "
                                                      "MistralForCausalLM configs (see README, Hugging Face models)");
  }
  int64_t integer(const char* key) const {
    if (!j.contains(key) || !j.at(key).is_number_integer() || j.at(key).get<int64_t>() <= 0) {
      fail("`" + std::string(key) + "` is missing or not a positive integer");
    }
    return j.at(key).get<int64_t>();
  }
  double number(const char* key, double fallback) const {
    if (!j.contains(key) || j.at(key).is_null()) return fallback;
    if (!j.at(key).is_number()) fail("`" + std::string(key) + "` is not a number");
    return j.at(key).get<double>();
  }
  bool flag(const char* key, bool fallback) const {
    if (!j.contains(key) || j.at(key).is_null()) return fallback;
    if (!j.at(key).is_boolean()) fail("`" + std::string(key) + "` is not true or false");
    return j.at(key).get<bool>();
  }
  std::string text(const char* key, const std::string& fallback) const {
    if (!j.contains(key) || j.at(key).is_null()) return fallback;
    if (!j.at(key).is_string()) fail("`" + std::string(key) + "` is not a string");
    return j.at(key).get<std::string>();
  }
  void unsupported_if(bool condition, const std::string& what) const {
    if (condition) fail(what + ", which hftrain's transformer does not implement");
  }
};

}  // namespace

ModelSpec spec_from_hf_config(const std::string& json_text, const std::string& source) {
  const Json j = Json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) throw util::CheckpointError(source + " is not a JSON object", "is it a config.json?");
  const Reader r{j, source};
  std::string arch;
  if (j.contains("architectures") && j["architectures"].is_array() && j["architectures"].size() == 1 &&
      j["architectures"][0].is_string()) {
    arch = j["architectures"][0].get<std::string>();
  } else {
    arch = r.text("model_type", "");
  }
  ModelSpec s;
  s.dropout = 0;
  if (arch == "GPT2LMHeadModel" || arch == "GPT2Model" || arch == "gpt2") {
    s.arch = config::ModelArch::kGpt2;
    s.n_layer = r.integer("n_layer");
    s.n_head = r.integer("n_head");
    s.n_kv_head = s.n_head;
    s.d_model = r.integer("n_embd");
    s.d_ff = j.contains("n_inner") && !j["n_inner"].is_null() ? r.integer("n_inner") : 4 * s.d_model;
    s.max_seq_len = r.integer("n_positions");
    s.vocab_size = r.integer("vocab_size");
    s.norm_eps = r.number("layer_norm_epsilon", 1e-5);
    s.tie_embeddings = r.flag("tie_word_embeddings", true);
    s.init_std = r.number("initializer_range", 0.02);
    const std::string act = r.text("activation_function", "gelu_new");
    r.unsupported_if(act != "gelu_new" && act != "gelu_pytorch_tanh", "activation_function is " + act);
    r.unsupported_if(r.flag("scale_attn_by_inverse_layer_idx", false), "scale_attn_by_inverse_layer_idx is on");
    r.unsupported_if(!r.flag("scale_attn_weights", true), "scale_attn_weights is off");
  } else if (arch == "LlamaForCausalLM" || arch == "MistralForCausalLM" || arch == "llama" || arch == "mistral") {
    s.arch = config::ModelArch::kLlama;
    s.n_layer = r.integer("num_hidden_layers");
    s.n_head = r.integer("num_attention_heads");
    s.n_kv_head = j.contains("num_key_value_heads") && !j["num_key_value_heads"].is_null()
                      ? r.integer("num_key_value_heads")
                      : s.n_head;
    s.d_model = r.integer("hidden_size");
    s.d_ff = r.integer("intermediate_size");
    s.max_seq_len = r.integer("max_position_embeddings");
    s.vocab_size = r.integer("vocab_size");
    s.norm_eps = r.number("rms_norm_eps", 1e-6);
    s.tie_embeddings = r.flag("tie_word_embeddings", false);
    s.init_std = r.number("initializer_range", 0.02);
    s.rope_theta = r.number("rope_theta", 10000.0);
    if (j.contains("rope_parameters") && j["rope_parameters"].is_object()) {  // transformers 5.x
      const Reader rp{j["rope_parameters"], source};
      s.rope_theta = rp.number("rope_theta", s.rope_theta);
      const std::string type = rp.text("rope_type", "default");
      r.unsupported_if(type != "default", "rope_parameters.rope_type is " + type);
    }
    r.unsupported_if(j.contains("rope_scaling") && !j["rope_scaling"].is_null(), "rope_scaling is set");
    r.unsupported_if(j.contains("sliding_window") && !j["sliding_window"].is_null(), "sliding_window is set");
    r.unsupported_if(r.flag("attention_bias", false), "attention_bias is on");
    r.unsupported_if(r.flag("mlp_bias", false), "mlp_bias is on");
    const std::string act = r.text("hidden_act", "silu");
    r.unsupported_if(act != "silu", "hidden_act is " + act);
    if (j.contains("head_dim") && !j["head_dim"].is_null()) {
      r.unsupported_if(r.integer("head_dim") * s.n_head != s.d_model, "head_dim x num_attention_heads != hidden_size");
    }
  } else {
    r.fail("architecture `" + (arch.empty() ? std::string("(none)") : arch) + "` is not supported");
  }
  if (s.d_model % s.n_head != 0 || s.n_head % s.n_kv_head != 0) r.fail("the head counts do not divide the sizes");
  return s;
}

std::string shape_overrides(const ModelSpec& s) {
  auto number = [](double v) {
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof(buf), v);  // the shortest text that reads back as v
    return std::string(buf, r.ptr);
  };
  std::string out = std::string("model.arch=") + (s.arch == config::ModelArch::kGpt2 ? "gpt2" : "llama") +
                    " model.n_layer=" + std::to_string(s.n_layer) + " model.n_head=" + std::to_string(s.n_head) +
                    " model.n_kv_head=" + std::to_string(s.n_kv_head) + " model.d_model=" + std::to_string(s.d_model) +
                    " model.d_ff=" + std::to_string(s.d_ff) + " model.max_seq_len=" + std::to_string(s.max_seq_len) +
                    " model.vocab_size=" + std::to_string(s.vocab_size) +
                    " model.tie_embeddings=" + (s.tie_embeddings ? "true" : "false");
  out += " model.norm_eps=" + number(s.norm_eps);
  if (s.arch == config::ModelArch::kLlama) out += " model.rope_theta=" + number(s.rope_theta);
  return out;
}

}  // namespace hftrain::model
