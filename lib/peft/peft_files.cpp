#include "peft/peft_files.h"

#include <map>
#include <set>

#include <torch/torch.h>

#include "model/weights/safetensors.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json_depth.h"

namespace hftrain::peft {
namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

const char* kPrefix = "base_model.model.";
const char* kDamaged = "the adapter directory is damaged or was not written by peft; save it again";

std::string a_name(const model::HfLinear& t) { return kPrefix + t.name + ".lora_A.weight"; }
std::string b_name(const model::HfLinear& t) { return kPrefix + t.name + ".lora_B.weight"; }
std::string magnitude_name(const model::HfLinear& t) { return kPrefix + t.name + ".lora_magnitude_vector"; }

// The hftrain parameters of the saved modules, with their peft tensor name and whether the
// Hugging Face tensor is the transpose of ours (GPT-2's Conv1D).
struct SavedTensor {
  std::string param;
  std::string name;
  bool transpose = false;
};

std::vector<SavedTensor> saved_tensors(const LoraModel& lora, const std::vector<model::HfParameter>& hf_parameters) {
  std::vector<SavedTensor> out;
  const std::set<std::string> trainable(lora.trainable.begin(), lora.trainable.end());
  for (const auto& p : hf_parameters) {
    if (!trainable.contains(p.param) || p.tensors.size() != 1) continue;
    out.push_back({p.param, kPrefix + p.tensors.front(), p.transpose});
  }
  return out;
}

torch::Tensor parameter(torch::nn::Module& root, const std::string& name) {
  auto params = root.named_parameters(/*recurse=*/true);
  if (!params.contains(name)) throw util::CheckpointError("the model has no parameter " + name);
  return params[name];
}

template <typename T>
T get(const Json& j, const char* key, const fs::path& file, T fallback) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  try {
    return j[key].get<T>();
  } catch (const Json::exception&) {
    throw util::CheckpointError(file.string() + ": `" + key + "` is " + j[key].dump().substr(0, 60) +
                                    ", not the kind of value peft writes there",
                                kDamaged);
  }
}

}  // namespace

Json adapter_config(const LoraModel& lora, const config::LoraConfig& config, config::ModelArch arch,
                    const std::string& task_type, const std::string& base_model) {
  std::vector<std::string> targets;
  for (const auto& t : lora.targets) targets.push_back(t.name);
  Json init = config.init == config::LoraInit::kGaussian ? Json("gaussian") : Json(true);
  return Json{{"peft_type", "LORA"},
              {"task_type", task_type},
              {"base_model_name_or_path", base_model},
              {"r", config.r},
              {"lora_alpha", config.alpha},
              {"lora_dropout", config.dropout},
              {"target_modules", targets},
              {"modules_to_save", lora.modules_to_save.empty() ? Json(nullptr) : Json(lora.modules_to_save)},
              {"fan_in_fan_out", arch == config::ModelArch::kGpt2},
              {"bias", "none"},
              {"use_rslora", config.use_rslora},
              {"use_dora", config.use_dora},
              {"init_lora_weights", init},
              {"inference_mode", true},
              {"rank_pattern", Json::object()},
              {"alpha_pattern", Json::object()},
              {"layers_to_transform", nullptr},
              {"layers_pattern", nullptr},
              {"revision", nullptr}};  // only peft's LoraConfig fields: peft warns about any other
}

model::TensorList adapter_tensors(torch::nn::Module& root, const LoraModel& lora,
                                  const std::vector<model::HfParameter>& hf_parameters) {
  model::TensorList out;
  torch::NoGradGuard no_grad;
  const auto adapters = lora_adapters(root);
  for (const auto& t : lora.targets) {
    const auto& adapter = adapters.at(t.dense);
    for (const auto& s : adapter->slices()) {
      if (s.row_offset != t.row_offset) continue;
      out.emplace_back(a_name(t), s.A.detach().to(torch::kCPU, torch::kFloat32));
      out.emplace_back(b_name(t), s.B.detach().to(torch::kCPU, torch::kFloat32));
      if (s.magnitude.defined())
        out.emplace_back(magnitude_name(t), s.magnitude.detach().to(torch::kCPU, torch::kFloat32));
    }
  }
  for (const auto& s : saved_tensors(lora, hf_parameters)) {
    auto value = parameter(root, s.param).detach().to(torch::kCPU, torch::kFloat32);
    out.emplace_back(s.name, s.transpose ? value.t().contiguous() : value);
  }
  return out;
}

void write_adapter_files(const fs::path& dir, const Json& config, const model::TensorList& tensors) {
  model::write_safetensors(dir / kAdapterWeightsFile, tensors, {{"format", "pt"}});
  util::atomic_write_file(dir / kAdapterConfigFile, config.dump(2) + "\n");
}

AdapterFile read_adapter_config(const fs::path& dir) {
  const fs::path file = dir / kAdapterConfigFile;
  const std::string text = util::read_file<util::CheckpointError>(file, "peft adapter config", size_t{1} << 20);
  Json j = util::parse_json<util::CheckpointError>(text, file.string());
  if (j.is_discarded() || !j.is_object()) {
    throw util::CheckpointError(file.string() + " is not a JSON object", kDamaged);
  }
  const std::string type = get<std::string>(j, "peft_type", file, "");
  if (type != "LORA") {
    throw util::CheckpointError(file.string() + ": peft_type is '" + type + "'; hftrain continues LoRA adapters only",
                                "start a new LoRA adapter (peft.method=lora without peft.from)");
  }
  AdapterFile a;
  a.dir = dir;
  a.lora.r = get<int64_t>(j, "r", file, 8);
  a.lora.alpha = get<double>(j, "lora_alpha", file, 8.0);
  a.lora.dropout = get<double>(j, "lora_dropout", file, 0.0);
  a.lora.use_rslora = get<bool>(j, "use_rslora", file, false);
  if (a.lora.r < 1 || a.lora.r > 65536) {
    throw util::CheckpointError(file.string() + ": r is " + std::to_string(a.lora.r) + ", outside 1..65536", kDamaged);
  }
  if (!(a.lora.dropout >= 0 && a.lora.dropout < 1) || !(a.lora.alpha >= 0)) {
    throw util::CheckpointError(file.string() + ": lora_alpha or lora_dropout is out of range", kDamaged);
  }
  const auto refuse = [&](const std::string& what) {
    throw util::CheckpointError(file.string() + ": " + what + ", which hftrain does not train",
                                "continue it with peft, or start a new adapter with peft.method=lora");
  };
  a.lora.use_dora = get<bool>(j, "use_dora", file, false);
  if (get<std::string>(j, "bias", file, "none") != "none") refuse("bias is not \"none\" (trained biases)");
  for (const char* key : {"rank_pattern", "alpha_pattern"}) {
    if (j.contains(key) && j[key].is_object() && !j[key].empty()) refuse(std::string(key) + " is set");
  }
  if (j.contains("layers_to_transform") && !j["layers_to_transform"].is_null()) refuse("layers_to_transform is set");
  const Json targets = j.value("target_modules", Json());
  if (targets.is_string()) {
    if (targets.get<std::string>() != "all-linear") refuse("target_modules is a regular expression");
    a.target_modules = {"all-linear"};
  } else if (targets.is_array()) {
    for (const auto& t : targets) {
      if (!t.is_string()) throw util::CheckpointError(file.string() + ": target_modules holds a non-string", kDamaged);
      a.target_modules.push_back(t.get<std::string>());
    }
  } else {
    throw util::CheckpointError(file.string() + ": target_modules is missing", kDamaged);
  }
  a.lora.target_modules = a.target_modules;
  const Json init = j.value("init_lora_weights", Json(true));
  a.lora.init = init.is_string() && init.get<std::string>() == "gaussian" ? config::LoraInit::kGaussian
                                                                            : config::LoraInit::kDefault;
  if (j.contains("modules_to_save") && j["modules_to_save"].is_array()) {
    for (const auto& m : j["modules_to_save"]) {
      if (m.is_string()) a.modules_to_save.push_back(m.get<std::string>());
    }
  }
  a.base_model = get<std::string>(j, "base_model_name_or_path", file, "");
  a.task_type = get<std::string>(j, "task_type", file, "");
  return a;
}

void load_adapter_weights(torch::nn::Module& root, const LoraModel& lora,
                          const std::vector<model::HfParameter>& hf_parameters, const AdapterFile& file) {
  const fs::path path = file.dir / kAdapterWeightsFile;
  const model::TensorList tensors = model::read_safetensors(path);
  std::map<std::string, torch::Tensor> by_name;
  for (const auto& [name, t] : tensors) {
    // peft may keep the adapter's name ("default") in the key; hftrain's saves never do.
    std::string key = name;
    for (const char* tag : {".lora_A.default.weight", ".lora_B.default.weight"}) {
      const std::string tail(tag);
      if (key.ends_with(tail)) key = key.substr(0, key.size() - tail.size()) + tail.substr(0, 7) + ".weight";
    }
    by_name[key] = t;
  }
  std::set<std::string> used;
  torch::NoGradGuard no_grad;
  const auto copy = [&](const std::string& name, torch::Tensor into, bool transpose) {
    const auto it = by_name.find(name);
    if (it == by_name.end()) {
      throw util::CheckpointError(
          path.string() + " has no tensor " + name,
          "the adapter was trained on other modules or another model; check adapter_config.json");
    }
    const torch::Tensor value = transpose ? it->second.t() : it->second;
    if (value.sizes() != into.sizes()) {
      std::ostringstream have, want;
      have << value.sizes();
      want << into.sizes();
      throw util::CheckpointError(path.string() + ": " + name + " has shape " + have.str() + ", the model needs " +
                                      want.str(),
                                  "the adapter belongs to a model of another shape, or r differs");
    }
    into.copy_(value);
    used.insert(name);
  };
  const auto adapters = lora_adapters(root);
  for (const auto& t : lora.targets) {
    for (const auto& s : adapters.at(t.dense)->slices()) {
      if (s.row_offset != t.row_offset) continue;
      copy(a_name(t), s.A, false);
      copy(b_name(t), s.B, false);
      if (s.magnitude.defined()) copy(magnitude_name(t), s.magnitude, false);
    }
  }
  for (const auto& s : saved_tensors(lora, hf_parameters)) copy(s.name, parameter(root, s.param), s.transpose);
  for (const auto& [name, t] : by_name) {
    if (!used.contains(name)) {
      throw util::CheckpointError(path.string() + " holds " + name + ", which the adapter's config does not explain",
                                  kDamaged);
    }
  }
}

}  // namespace hftrain::peft
