// LoRA adapters in the peft library's files: adapter_config.json and adapter_model.safetensors,
// which peft.PeftModel.from_pretrained(base, dir) loads. Tensor names are peft's:
//   base_model.model.<module>.lora_A.weight (r x in), ...lora_B.weight (out x r),
//   ...lora_magnitude_vector (out; DoRA)
//   base_model.model.<tensor> for the tensors of peft.modules_to_save (e.g. lm_head.weight)
// where <module> is the Hugging Face module name (model/hf/hf_modules.h). hftrain's fused layers
// are saved per Hugging Face module, so q_proj's adapter is exactly the q slice's.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/nn/module.h>

#include "config/config.h"
#include "model/hf/hf_modules.h"
#include "model/weights/stored_weights.h"
#include "peft/lora.h"

namespace hftrain::peft {

inline constexpr const char* kAdapterConfigFile = "adapter_config.json";
inline constexpr const char* kAdapterWeightsFile = "adapter_model.safetensors";

// adapter_config.json for `lora` (peft's LoraConfig fields). `task_type`: "CAUSAL_LM", "SEQ_CLS" or "TOKEN_CLS";
// `base_model`: the base model's path as the run named it.
nlohmann::json adapter_config(const LoraModel& lora, const config::LoraConfig& config, config::ModelArch arch,
                              const std::string& task_type, const std::string& base_model);

// The adapters and saved modules of `root` under peft's names, fp32 on the CPU.
model::TensorList adapter_tensors(torch::nn::Module& root, const LoraModel& lora,
                                  const std::vector<model::HfParameter>& hf_parameters);

// Writes both files into `dir` (which exists), each crash-safely.
void write_adapter_files(const std::filesystem::path& dir, const nlohmann::json& config,
                         const model::TensorList& tensors);

// What an adapter directory says: its LoRA settings and targets (full Hugging Face module
// names), and its modules to save.
struct AdapterFile {
  std::filesystem::path dir;
  config::LoraConfig lora;
  std::vector<std::string> target_modules;  // as written: full names, or peft's suffixes
  std::vector<std::string> modules_to_save;
  std::string base_model;
  std::string task_type;  // CAUSAL_LM, SEQ_CLS, TOKEN_CLS; empty when the file has none
};

// Reads adapter_config.json. Throws CheckpointError naming the file and field for a missing or
// malformed file, a PEFT type other than LORA, or a setting hftrain does not train (a bias other
// than "none", a regex target_modules string, rank or alpha patterns).
AdapterFile read_adapter_config(const std::filesystem::path& dir);

// Copies the adapter tensors of `file` into the attached adapters and saved modules of `root`.
// Throws CheckpointError naming the file and tensor for one missing, unexpected or mis-shaped.
void load_adapter_weights(torch::nn::Module& root, const LoraModel& lora,
                          const std::vector<model::HfParameter>& hf_parameters, const AdapterFile& file);

}  // namespace hftrain::peft
