// `hftrain export --hf`: a model directory that Hugging Face `transformers` loads with
// from_pretrained, and `tokenizers` / AutoTokenizer reads, with no conversion script:
//   config.json             GPT2LMHeadModel or LlamaForCausalLM, from the ModelSpec
//   model.safetensors       the weights under Hugging Face names (hf_weights.h)
//   tokenizer.json          BPE as trained; the byte tokenizer as the equivalent byte-level BPE
//                           with no merges (same ids: byte b is id b, specials after)
//   tokenizer_config.json   PreTrainedTokenizerFast with the end-of-text and padding tokens
//   generation_config.json  the end-of-text id
#pragma once

#include <filesystem>

#include "model/saved_model.h"

namespace hftrain::model {

// Writes `out` from the loaded model directory, crash-safely (staged, then swapped in whole).
// Throws IoError naming the path.
void export_hf(const LoadedModel& model, const std::filesystem::path& out);

}  // namespace hftrain::model
