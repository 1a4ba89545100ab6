#include "train/build/peft_setup.h"

#include <algorithm>
#include <map>
#include <sstream>

#include <torch/torch.h>

#include "model/weights/safetensors_header.h"
#include "parallel/plan/memory_plan.h"
#include "peft/quantized_linear.h"
#include "train/build/model_from.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/log.h"

namespace hftrain::train {
namespace fs = std::filesystem;

namespace {

// 12,345,678: thousands apart, for parameter counts.
std::string count(int64_t n) {
  const std::string digits = std::to_string(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

// "q_proj, v_proj (x 2 layers)"-style summary of the targets.
std::string describe_targets(const std::vector<model::HfLinear>& targets) {
  std::map<std::string, int> leaves;
  for (const auto& t : targets) ++leaves[t.name.substr(t.name.rfind('.') + 1)];
  std::string out;
  for (const auto& [leaf, n] : leaves)
    out += (out.empty() ? "" : ", ") + leaf + (n > 1 ? " x" + std::to_string(n) : "");
  return out;
}

// A recipe value the adapter overrides, named so that the user sees what is in effect.
void note_differences(const config::LoraConfig& recipe, const config::LoraConfig& adapter, const fs::path& dir) {
  std::vector<std::string> diffs;
  if (recipe.r != adapter.r) diffs.push_back("r " + std::to_string(adapter.r));
  if (recipe.alpha != adapter.alpha) diffs.push_back("alpha " + std::to_string(adapter.alpha));
  if (recipe.use_rslora != adapter.use_rslora)
    diffs.push_back(std::string("use_rslora ") + (adapter.use_rslora ? "true" : "false"));
  if (recipe.use_dora != adapter.use_dora)
    diffs.push_back(std::string("use_dora ") + (adapter.use_dora ? "true" : "false"));
  if (!diffs.empty()) {
    std::string list;
    for (const auto& d : diffs) list += (list.empty() ? "" : ", ") + d;
    util::log::warn("peft.from " + dir.string() + ": the adapter's own settings are used (" + list +
                    "), not peft.lora.*'s");
  }
}

}  // namespace

nlohmann::json PeftRun::adapter_config() const {
  return peft::adapter_config(lora, lora_config, arch, task_type, fs::absolute(base_dir).string());
}

std::optional<PeftRun> attach_peft(const config::Config& config, TaskModel& model) {
  if (config.peft.method == config::PeftMethod::kNone) {
    if (config.peft.from) {
      throw util::ConfigError("peft.from is set but peft.method is none",
                              "set peft.method=lora to continue the adapter, or remove peft.from");
    }
    return std::nullopt;
  }
  if (!config.model.from) {
    throw util::ConfigError("peft.method=lora trains adapters on a base model, but model.from is not set",
                            "set model.from to the base model's directory (Hugging Face or hftrain)");
  }
  PeftRun run;
  run.arch = model.arch();
  // A reward model (a decoder with a score head) is a sequence classifier to peft.
  const bool scorer = model.decoder_spec() && model.decoder_spec()->score_outputs > 0;
  run.task_type = model.causal_lm() && !scorer ? "CAUSAL_LM" : model.per_token() ? "TOKEN_CLS" : "SEQ_CLS";
  run.lora_config = config.peft.lora;
  run.hf_parameters = model.hf_parameters();
  run.base_dir = read_model_source(*config.model.from).dir;
  run.base_fingerprint = base_model_fingerprint(run.base_dir);
  std::vector<std::string> modules_to_save = config.peft.modules_to_save;
  std::optional<peft::AdapterFile> from;
  if (config.peft.from) {
    from = peft::read_adapter_config(*config.peft.from);
    note_differences(config.peft.lora, from->lora, *config.peft.from);
    run.lora_config = from->lora;
    run.lora_config.dropout = config.peft.lora.dropout;  // a training choice, not part of the adapter
    if (modules_to_save.empty()) modules_to_save = from->modules_to_save;
  }
  // A classifier's head is new (or retrained for these labels): peft's sequence-classification
  // models always train it in full, and so does this: the classifier, and the modules holding the
  // other output-layer linears (hf_modules.h), RoBERTa's classifier.dense, ModernBERT's head,
  // DeBERTa's pooler, which a base encoder directory lacks as well.
  if (!model.causal_lm() || scorer) {
    std::vector<std::string> heads;
    if (!scorer) heads.push_back("classifier");
    for (const auto& linear : model.hf_linear_modules()) {
      if (linear.output_layer) heads.push_back(linear.name.substr(0, linear.name.find('.')));
    }
    for (const auto& module : heads) {
      if (std::find(modules_to_save.begin(), modules_to_save.end(), module) == modules_to_save.end()) {
        modules_to_save.push_back(module);
      }
    }
  }
  const auto targets = peft::select_lora_targets(model.hf_linear_modules(), run.lora_config.target_modules, run.arch);
  // The adapters' A from the run's seed, whatever the base model's loading drew.
  torch::manual_seed(static_cast<uint64_t>(config.run.seed) + 31337u);
  run.lora = peft::attach_lora(model.module(), targets, run.hf_parameters, modules_to_save, run.lora_config);
  if (from) peft::load_adapter_weights(model.module(), run.lora, run.hf_parameters, *from);
  const int64_t total = run.lora.trainable_parameters + run.lora.frozen_parameters;
  std::ostringstream pct;
  pct.precision(3);
  pct << 100.0 * static_cast<double>(run.lora.trainable_parameters) / static_cast<double>(std::max<int64_t>(total, 1));
  util::log::info("LoRA r=" + std::to_string(run.lora_config.r) + " on " + std::to_string(targets.size()) +
                  " modules (" + describe_targets(targets) + ")" +
                  (modules_to_save.empty() ? "" : ", training in full: " + [&] {
                    std::string s;
                    for (const auto& m : modules_to_save) s += (s.empty() ? "" : ", ") + m;
                    return s;
                  }()) +
                  (from ? ", continuing " + from->dir.string() : "") + ": " + count(run.lora.trainable_parameters) +
                  " trainable parameters (" + pct.str() + "%), " + count(run.lora.frozen_parameters) + " frozen");
  return run;
}

std::string base_model_fingerprint(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name == "config.json" || name == "model.json" || name.ends_with(".safetensors")) files.push_back(entry.path());
  }
  if (ec) throw util::CheckpointError("cannot list the base model directory " + dir.string() + ": " + ec.message());
  std::sort(files.begin(), files.end());
  std::string text;
  for (const auto& f : files) {
    text += f.filename().string() + "\n" + std::to_string(fs::file_size(f, ec)) + "\n";
    if (f.extension() == ".safetensors") {
      for (const auto& t : model::read_safetensors_header(f).tensors) {
        text += t.name + " " + t.dtype + " " + std::to_string(t.begin) + " " + std::to_string(t.end) + "\n";
      }
    } else {
      text += util::read_file<util::CheckpointError>(f, "base model config");
    }
  }
  std::ostringstream hex;
  hex << std::hex << util::hash64(text);
  return hex.str();
}

TrainableParams trainable_params(const std::vector<std::pair<std::string, torch::Tensor>>& params,
                                 const model::ParameterUnits& units) {
  TrainableParams out;
  std::vector<int64_t> index(params.size(), -1);
  for (size_t i = 0; i < params.size(); ++i) {
    if (!params[i].second.requires_grad()) continue;
    index[i] = static_cast<int64_t>(out.params.size());
    out.params.push_back(params[i]);
  }
  for (const auto& unit : units) {
    std::vector<size_t> kept;
    for (size_t i : unit) {
      if (index[i] >= 0) kept.push_back(static_cast<size_t>(index[i]));
    }
    out.units.push_back(std::move(kept));
  }
  return out;
}

PeftMemory peft_memory(const PeftRun& peft, TaskModel& model) {
  TrainableParams trained = trainable_params(model.parameters_by_name(), model.parameter_units());
  PeftMemory out;
  for (size_t u = 0; u < trained.units.size(); ++u) {
    int64_t n = 0;
    for (size_t i : trained.units[u]) n += trained.params[i].second.numel();
    if (u == 0) out.units.root = n; else out.units.block = std::max(out.units.block, n);
  }
  out.trained = std::move(trained.params);
  const double frozen = static_cast<double>(peft::frozen_bytes(model.module()));
  out.frozen_clause = "; frozen base: " + std::to_string(peft.lora.frozen_parameters) + " parameters, " +
                      parallel::format_bytes(frozen) + " on every rank";
  return out;
}

}  // namespace hftrain::train
