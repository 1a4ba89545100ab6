// `hftrain export --hf`: a model directory that Hugging Face `transformers` loads with
// from_pretrained, and `tokenizers` / AutoTokenizer reads, with no conversion script:
//   config.json             GPT2LMHeadModel, LlamaForCausalLM or Qwen2ForCausalLM (hf_config.h)
//   model.safetensors       the weights under Hugging Face names (hf_weights.h); above the shard
//                           size model-0000i-of-0000N.safetensors + model.safetensors.index.json
//   tokenizer.json          BPE as trained; the byte tokenizer as the equivalent byte-level BPE
//                           with no merges (same ids: byte b is id b, specials after)
//   tokenizer_config.json   PreTrainedTokenizerFast with the end-of-text and padding tokens
//   generation_config.json  the end-of-text id
#pragma once

#include <cstdint>
#include <filesystem>

#include "model/weights/saved_model.h"

namespace hftrain::model {

inline constexpr int64_t kDefaultHfShardBytes = 5'000'000'000;  // checkpoint.shard_size's default

// Writes `out` from the loaded model directory, crash-safely (staged, then swapped in whole),
// the weights in shards of at most `max_shard_bytes` (a larger tensor gets a shard of its own).
// Throws IoError naming the path, UsageError for a model no Hugging Face architecture holds.
void export_hf(const LoadedModel& model, const std::filesystem::path& out,
               int64_t max_shard_bytes = kDefaultHfShardBytes);

}  // namespace hftrain::model
