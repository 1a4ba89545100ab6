// A LoRA adapter directory (peft's adapter_config.json + adapter_model.safetensors, as a LoRA run's
// final/ holds them) used as a model: the base model it names is loaded, the adapters attached,
// and on request merged into the base weights (W += scale B A), which `hftrain export --hf --merge`
// writes out as a plain model.
#pragma once

#include <cstdint>
#include <filesystem>

#include "model/weights/saved_model.h"

namespace hftrain::train {

// Whether `dir` holds an adapter_config.json.
bool is_adapter_dir(const std::filesystem::path& dir);

// The base model named by the adapter's base_model_name_or_path (a Hugging Face or hftrain model
// directory), in eval mode on the CPU, with the adapters attached (merge=false) or merged into its
// weights and removed (merge=true). The tokenizer is the adapter directory's tokenizer.json, else
// the base's. Throws CheckpointError naming the file for a base that is gone or does not fit.
// CheckpointError for a BERT classifier's adapter (write_merged_classifier writes that).
model::LoadedModel load_adapter_model(const std::filesystem::path& dir, bool merge);

// Whether the adapter in `dir` adapts a BERT classifier (its base is a BERT directory; peft's
// SEQ_CLS). Throws what load_adapter_model throws for a base that is gone.
bool is_classifier_adapter(const std::filesystem::path& dir);

// A BERT classifier's adapter merged into its base, written crash-safely at `out` as a directory
// that transformers' BertForSequenceClassification.from_pretrained loads: config.json with the
// labels (the adapter directory's config.json, which a LoRA classifier run writes; else the base
// classifier's; else LABEL_i), the weights in shards of at most `max_shard_bytes`, tokenizer.json.
void write_merged_classifier(const std::filesystem::path& dir, const std::filesystem::path& out,
                             uint64_t max_shard_bytes);

}  // namespace hftrain::train
