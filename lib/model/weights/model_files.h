// The names of the files in a model directory, hftrain's and Hugging Face's, in one place.
#pragma once

namespace hftrain::model {

inline constexpr const char* kModelWeightsFile = "model.safetensors";
inline constexpr const char* kModelWeightsIndexFile = "model.safetensors.index.json";  // sharded weights
inline constexpr const char* kModelSpecFile = "model.json";     // hftrain's model (ModelSpec)
inline constexpr const char* kHfConfigFile = "config.json";     // Hugging Face's model config
inline constexpr const char* kTokenizerFile = "tokenizer.json";

}  // namespace hftrain::model
