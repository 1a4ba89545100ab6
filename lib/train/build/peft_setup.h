// peft.* in a training run: LoRA adapters attached to the task model after model.from is loaded,
// the base frozen, and what the run's checkpoints and final model need to know about them.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config.h"
#include "model/hf/hf_modules.h"
#include "peft/lora.h"
#include "peft/peft_files.h"
#include "train/task/task_model.h"

namespace hftrain::train {

struct PeftRun {
  peft::LoraModel lora;
  config::LoraConfig lora_config;  // in effect: the recipe's, or the adapter's under peft.from
  std::vector<model::HfParameter> hf_parameters;
  config::ModelArch arch = config::ModelArch::kLlama;
  std::string task_type = "CAUSAL_LM";  // peft's: CAUSAL_LM, SEQ_CLS for a classifier, TOKEN_CLS for a tagger
  std::filesystem::path base_dir;  // model.from as read
  std::string base_fingerprint;

  // The peft adapter directory's files.
  nlohmann::json adapter_config() const;
};

// Attaches the adapters peft.* describes to `model` (whose model.from weights are loaded), with
// peft.from's values when given, and freezes the rest; nullopt for peft.method=none. A run whose
// seed is the same draws the same adapters. A classifier (BERT) trains its classifier in full
// besides, as peft's SEQ_CLS models do. Throws ConfigError for a run without model.from or targets
// that match nothing; CheckpointError for an adapter
// directory that does not fit.
std::optional<PeftRun> attach_peft(const config::Config& config, TaskModel& model);

// A fingerprint of a base model directory: its config and each weight file's name, size and
// safetensors header (the tensors' names, dtypes, shapes and offsets), not every byte, so that a
// resume is checked in milliseconds at any model size.
std::string base_model_fingerprint(const std::filesystem::path& dir);

// The subset of `params` that trains (requires grad), and `units` re-indexed over that subset.
struct TrainableParams {
  std::vector<std::pair<std::string, torch::Tensor>> params;
  model::ParameterUnits units;
};
TrainableParams trainable_params(const std::vector<std::pair<std::string, torch::Tensor>>& params,
                                 const model::ParameterUnits& units);

// What the memory formulas count in a LoRA run: the trained tensors by unit (the frozen base is
// replicated on every rank), and the clause on the frozen base (quantized layers at their size).
struct PeftMemory {
  std::vector<std::pair<std::string, torch::Tensor>> trained;
  parallel::UnitSizes units;
  std::string frozen_clause;
};
PeftMemory peft_memory(const PeftRun& peft, TaskModel& model);

}  // namespace hftrain::train
