#include "train/adapter_model.h"

#include <torch/torch.h>

#include "model/hf_modules.h"
#include "model/hf_weights.h"
#include "model/stored_weights.h"
#include "peft/lora.h"
#include "peft/peft_files.h"
#include "train/model_from.h"
#include "util/error.h"

namespace hftrain::train {
namespace fs = std::filesystem;

bool is_adapter_dir(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / peft::kAdapterConfigFile, ec);
}

model::LoadedModel load_adapter_model(const fs::path& dir, bool merge) {
  const peft::AdapterFile file = peft::read_adapter_config(dir);
  if (file.base_model.empty()) {
    throw util::CheckpointError((dir / peft::kAdapterConfigFile).string() + " names no base model (base_model_name_or_path)",
                                "set it to the base model's directory");
  }
  if (!fs::exists(file.base_model)) {
    throw util::CheckpointError("the adapter in " + dir.string() + " was trained on " + file.base_model +
                                    ", which does not exist here",
                                "put the base model there, or edit base_model_name_or_path in " +
                                    (dir / peft::kAdapterConfigFile).string());
  }
  const ModelSource source = read_model_source(file.base_model);
  if (source.bert) {
    throw util::CheckpointError("the adapter in " + dir.string() + " names a BERT base model; hftrain loads LoRA "
                                "adapters on decoders (gpt2, llama) so far");
  }
  model::LoadedModel out;
  out.dir = dir;
  out.model = model::Transformer(source.spec, model::WeightInit::kSkip);
  if (source.hugging_face) {
    model::load_hf_weights(out.model, model::StoredWeights(source.dir));
  } else {
    model::load_model_weights(out.model, source.dir);
  }
  const auto hf_params = model::hf_parameters(source.spec);
  const auto targets = peft::select_lora_targets(model::hf_linear_modules(source.spec), file.target_modules, source.spec.arch);
  const peft::LoraModel lora = peft::attach_lora(*out.model, targets, hf_params, file.modules_to_save, file.lora);
  peft::load_adapter_weights(*out.model, lora, hf_params, file);
  if (merge) {
    torch::NoGradGuard no_grad;
    auto params = out.model->named_parameters();
    for (const auto& [dense, adapter] : peft::lora_adapters(*out.model)) {
      auto w = params[dense + ".weight"];
      w.add_(adapter->delta_weight(w.size(0), w.size(1)).to(w.dtype()));
    }
    for (auto& item : out.model->named_modules()) {
      if (auto* d = item.value()->as<model::DenseImpl>()) d->remove_adapter();
    }
  }
  for (auto& p : out.model->parameters()) p.requires_grad_(false);
  out.model->eval();
  fs::path tokenizer = dir / "tokenizer.json";
  if (!fs::exists(tokenizer)) tokenizer = source.dir / "tokenizer.json";
  out.tokenizer = model::load_tokenizer_file(tokenizer, &out.tokenizer_kind);
  return out;
}

}  // namespace hftrain::train
