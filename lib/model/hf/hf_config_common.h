// Internal to lib/model: what the Hugging Face config.json reader (hf_config.cpp), its RoPE part
// (hf_rope.cpp) and its family table (hf_families.cpp) share. Not for use outside lib/model.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/spec.h"
#include "util/error.h"
#include "util/json_fields.h"

namespace hftrain::model::hf {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

constexpr const char* kHint =
    "hftrain reads GPT2LMHeadModel, LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, "
    "Olmo2ForCausalLM, Phi3ForCausalLM, Gemma2ForCausalLM, Gemma3ForCausalLM, MixtralForCausalLM, "
    "Qwen2MoeForCausalLM and Qwen3MoeForCausalLM configs (see README, Hugging Face models)";

// A config.json object read field by field (util/json_fields.h): failures are CheckpointErrors
// naming the source and the key's path, with kHint.
using Reader = util::JsonFields;
// The reader of `j` from `source` (not copied: it outlives the reading).
inline Reader config_reader(const Json& j, const std::string& source) {
  return Reader(j, util::JsonPlace::top(source, util::ErrorKind::kCheckpoint, kHint));
}
// A number that null turns off (0), and `fallback` when the key is absent (Gemma's soft-caps).
inline double number_or_off(const Reader& r, const char* key, double fallback) {
  if (!r.json().contains(key)) return fallback;
  return r.json().at(key).is_null() ? 0.0 : r.number(key);
}
// Fails naming `what` as something hftrain's transformer does not implement.
inline void unsupported_if(const Reader& r, bool condition, const std::string& what) {
  if (condition) r.fail(what + ", which hftrain's transformer does not implement");
}

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
