// Internal to lib/model: what the Hugging Face config.json reader (hf_config.cpp), its RoPE part
// (hf_rope.cpp) and its family table (hf_families.cpp) share. Not for use outside lib/model.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/spec.h"
#include "util/error.h"

namespace hftrain::model::hf {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

constexpr const char* kHint =
    "hftrain reads GPT2LMHeadModel, LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, "
    "Olmo2ForCausalLM, Phi3ForCausalLM, Gemma2ForCausalLM, Gemma3ForCausalLM, MixtralForCausalLM, "
    "Qwen2MoeForCausalLM and Qwen3MoeForCausalLM configs (see README, Hugging Face models)";

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

// The shortest text that reads back as `v`.
std::string number(double v);

enum class LlamaFamily {
  kLlama,
  kMistral,
  kQwen2,
  kQwen3,
  kOlmo2,
  kPhi3,
  kGemma2,
  kGemma3,
  kMixtral,
  kQwen2Moe,
  kQwen3Moe
};

// The dense family whose block a mixture-of-experts family keeps (Mixtral: Mistral's; Qwen2-MoE:
// Qwen2's; Qwen3-MoE: Qwen3's).
inline LlamaFamily dense_block(LlamaFamily family) {
  switch (family) {
    case LlamaFamily::kMixtral: return LlamaFamily::kMistral;
    case LlamaFamily::kQwen2Moe: return LlamaFamily::kQwen2;
    case LlamaFamily::kQwen3Moe: return LlamaFamily::kQwen3;
    default: return family;
  }
}

// The Llama-block families: <Name>ForCausalLM, <Name>Model or the model_type.
struct FamilyName {
  std::string name, model_type;
  LlamaFamily family;
};
const FamilyName& family_name(LlamaFamily family);
// The family `arch` names (an architecture or a model_type); null for none.
const FamilyName* find_family(const std::string& arch);

// Throws UsageError: no Hugging Face architecture hftrain writes has `what`.
[[noreturn]] void no_family(const std::string& what, const std::string& hint);

// The Hugging Face architecture that computes what `s` (a llama-family spec) computes; throws
// UsageError naming the combination none of them has.
LlamaFamily export_family(const ModelSpec& s);

// RoPE theta and scaling. transformers 5 writes rope_parameters ({rope_type, rope_theta, factor,
// ...}); 4.x wrote rope_theta and rope_scaling ({type or rope_type, factor, ...}). transformers 5
// lets rope_scaling win when both are there, and so do we.
void read_rope(const Reader& r, ModelSpec& s);

// Gemma 3's RoPE: the full layers' parameters and theta (default 1e6), and the sliding layers' theta
// (rope_local_base_freq, default 10000; transformers 5: rope_parameters per layer type).
// Returns the config with rope_parameters / rope_theta as read_rope reads the full layers'.
Json gemma3_rope(const Reader& r, ModelSpec& s);

// rope_parameters for `s` (transformers 5): the type and what it reads; `theta` adds rope_theta.
OrderedJson rope_json(const ModelSpec& s, bool theta);

}  // namespace hftrain::model::hf
