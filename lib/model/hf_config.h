// A Hugging Face config.json as hftrain's ModelSpec, for the architectures hftrain's transformer
// computes exactly: GPT2LMHeadModel, and LlamaForCausalLM / MistralForCausalLM without RoPE
// scaling, sliding windows or biases. Anything else is refused with what differs.
#pragma once

#include <string>

#include "model/spec.h"

namespace hftrain::model {

// Throws CheckpointError naming `source` and the field for a missing or malformed field, an
// unsupported architecture or an option hftrain does not implement.
ModelSpec spec_from_hf_config(const std::string& json_text, const std::string& source);

// The model.* overrides that give `spec`'s shape ("model.arch=llama model.n_layer=2 ...").
std::string shape_overrides(const ModelSpec& spec);

}  // namespace hftrain::model
