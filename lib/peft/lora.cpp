#include "peft/lora.h"

#include <fnmatch.h>

#include <algorithm>
#include <cmath>
#include <set>

#include <torch/torch.h>

#include "util/error.h"
#include "util/strings.h"

namespace hftrain::peft {
namespace {

bool glob(const std::string& pattern, const std::string& text) {
  return ::fnmatch(pattern.c_str(), text.c_str(), 0) == 0;
}

// peft's rule, with globs: the whole name, or a tail after a '.'.
bool module_matches(const std::string& pattern, const std::string& name) {
  if (glob(pattern, name)) return true;
  for (size_t dot = name.find('.'); dot != std::string::npos; dot = name.find('.', dot + 1)) {
    if (glob(pattern, name.substr(dot + 1))) return true;
  }
  return false;
}

std::string leaf_of(const std::string& module) { return module.substr(module.rfind('.') + 1); }

// A few names and how many there are, for messages.
std::string some_of(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < 6; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > 6) out += ", ... (" + std::to_string(names.size()) + " in all)";
  return out;
}

// peft's defaults per architecture; a llama-family model named as Phi-3 (fused qkv_proj) takes
// Phi-3's. peft has none for ModernBERT: its fused attention input (Wqkv), as q and v elsewhere.
std::vector<std::string> default_targets(config::ModelArch arch, const std::vector<std::string>& names) {
  const auto any_ends = [&](const char* leaf) {
    return std::any_of(names.begin(), names.end(), [&](const std::string& n) { return n.ends_with(leaf); });
  };
  const bool fused = any_ends(".qkv_proj");
  if (arch == config::ModelArch::kBert && any_ends(".Wqkv")) return {"Wqkv"};
  if (arch == config::ModelArch::kBert && any_ends(".query_proj")) return {"query_proj", "value_proj"};  // DeBERTa-v2
  switch (arch) {
    case config::ModelArch::kGpt2: return {"c_attn"};
    case config::ModelArch::kLlama:
      return fused ? std::vector<std::string>{"qkv_proj"} : std::vector<std::string>{"q_proj", "v_proj"};
    case config::ModelArch::kBert: return {"query", "value"};
  }
  return {};
}

class LoraSliceImpl : public torch::nn::Module {
 public:
  LoraSliceImpl(int64_t rows, int64_t in_features, int64_t r, bool dora) {
    A = register_parameter("A", torch::empty({r, in_features}));
    B = register_parameter("B", torch::zeros({rows, r}));
    if (dora) magnitude = register_parameter("magnitude", torch::empty({rows}));
  }
  torch::Tensor A, B, magnitude;
};

// ||W + scale B A|| over each row (peft's get_weight_norm, torch.linalg.norm(dim=1)).
torch::Tensor row_norms(const torch::Tensor& w, const torch::Tensor& scaled_delta) {
  return at::linalg_vector_norm(w + scaled_delta, 2, {1});
}

}  // namespace

double lora_scale(const config::LoraConfig& config) {
  const double r = static_cast<double>(config.r);
  return config.use_rslora ? config.alpha / std::sqrt(r) : config.alpha / r;
}

LoraAdapterImpl::LoraAdapterImpl(const std::vector<model::HfLinear>& targets, const config::LoraConfig& config,
                                 const model::DenseImpl& layer)
    : scale_(lora_scale(config)), dropout_(config.dropout), dora_(config.use_dora) {
  torch::NoGradGuard no_grad;
  // DoRA's magnitudes start at ||W||_row (B is zero, so the adapted layer starts as the base): the
  // layer's weight is read (a quantized one dequantized) once for all its slices.
  const torch::Tensor weight = dora_ ? layer.effective_weight(torch::kFloat32) : torch::Tensor();
  for (const auto& t : targets) {
    auto slice = register_module(leaf_of(t.name),
                                 std::make_shared<LoraSliceImpl>(t.rows, t.in_features, config.r, config.use_dora));
    if (dora_) slice->magnitude.copy_(at::linalg_vector_norm(weight.narrow(0, t.row_offset, t.rows), 2, {1}));
    if (config.init == config::LoraInit::kGaussian) {
      slice->A.normal_(0.0, 1.0 / static_cast<double>(config.r));
    } else {
      // peft: kaiming_uniform_(a=sqrt(5)), a bound of 1/sqrt(in).
      torch::nn::init::kaiming_uniform_(slice->A, std::sqrt(5.0));
    }
    slices_.push_back(Slice{leaf_of(t.name), t.row_offset, t.rows, slice->A, slice->B, slice->magnitude});
  }
  std::sort(slices_.begin(), slices_.end(), [](const Slice& a, const Slice& b) { return a.row_offset < b.row_offset; });
}

torch::Tensor LoraAdapterImpl::adapt(const torch::Tensor& x, const torch::Tensor& y, const model::DenseImpl& layer) {
  namespace F = torch::nn::functional;
  const int64_t out = y.size(-1);
  const bool dropped = dropout_ > 0 && is_training();
  // DoRA reads the layer's weight (a quantized one dequantized: a whole product's worth of work)
  // once per forward, whatever the number of adapted slices.
  const torch::Tensor weight = dora_ ? layer.effective_weight(x.scalar_type()) : torch::Tensor();
  std::vector<torch::Tensor> pieces;
  int64_t at = 0;
  for (const auto& s : slices_) {
    // Each adapted module draws its own dropout, as peft's do.
    const auto h = dropped ? F::dropout(x, F::DropoutFuncOptions().p(dropout_).training(true)) : x;
    const auto y_rows = y.narrow(-1, s.row_offset, s.rows);
    torch::Tensor adapted;
    if (!dora_) {
      adapted = y_rows + F::linear(F::linear(h, s.A), s.B) * scale_;
    } else {
      // peft's DoraLinearLayer.forward, in its order of operations.
      const auto w = weight.narrow(0, s.row_offset, s.rows);
      const auto lora_weight = torch::matmul(s.B, s.A).to(x.scalar_type()).detach();
      const auto norm = row_norms(w, scale_ * lora_weight).detach();
      const auto mag_norm_scale = s.magnitude / norm;  // broadcast over the last dimension
      auto base = dropped ? F::linear(h, w) : y_rows;
      if (!dropped && layer.bias.defined()) base = base - layer.bias.narrow(0, s.row_offset, s.rows);
      adapted = y_rows + ((mag_norm_scale - 1) * base + mag_norm_scale * F::linear(F::linear(h, s.A), s.B) * scale_);
    }
    if (s.row_offset == 0 && s.rows == out) return adapted;
    if (s.row_offset > at) pieces.push_back(y.narrow(-1, at, s.row_offset - at));
    pieces.push_back(adapted);
    at = s.row_offset + s.rows;
  }
  if (at < out) pieces.push_back(y.narrow(-1, at, out - at));
  return torch::cat(pieces, -1);
}

torch::Tensor LoraAdapterImpl::delta_weight(int64_t out_features, int64_t in_features) const {
  torch::NoGradGuard no_grad;
  auto delta = torch::zeros({out_features, in_features}, slices_.front().A.options().dtype(torch::kFloat32));
  for (const auto& s : slices_) {
    delta.narrow(0, s.row_offset, s.rows)
        .copy_(torch::matmul(s.B.to(torch::kFloat32), s.A.to(torch::kFloat32)) * scale_);
  }
  return delta;
}

torch::Tensor LoraAdapterImpl::merged_weight(const torch::Tensor& weight) const {
  torch::NoGradGuard no_grad;
  const auto w = weight.to(torch::kFloat32);
  auto merged = w + delta_weight(w.size(0), w.size(1));
  if (dora_) {
    for (const auto& s : slices_) {
      auto rows = merged.narrow(0, s.row_offset, s.rows);  // W + scale B A
      rows.mul_((s.magnitude.to(torch::kFloat32) / at::linalg_vector_norm(rows, 2, {1})).view({-1, 1}));
    }
  }
  return merged;
}

std::vector<model::HfLinear> select_lora_targets(const std::vector<model::HfLinear>& modules,
                                                 const std::vector<std::string>& target_modules,
                                                 config::ModelArch arch) {
  std::vector<std::string> names;
  for (const auto& m : modules) names.push_back(m.name);
  const bool all_linear = target_modules.size() == 1 && target_modules[0] == "all-linear";
  const std::vector<std::string> patterns = target_modules.empty() ? default_targets(arch, names) : target_modules;
  std::vector<bool> chosen(modules.size(), false);
  for (const auto& pattern : all_linear ? std::vector<std::string>{} : patterns) {
    if (pattern == "all-linear") {
      throw util::ConfigError("peft.lora.target_modules lists 'all-linear' among other entries",
                              "give ['all-linear'] alone, or the modules by name");
    }
    bool any = false;
    for (size_t i = 0; i < modules.size(); ++i) {
      if (!module_matches(pattern, modules[i].name)) continue;
      if (modules[i].output_layer) {
        throw util::ConfigError("peft.lora.target_modules entry '" + pattern + "' selects the output layer " +
                                    modules[i].name + ", which hftrain does not adapt",
                                "train it in full with peft.modules_to_save: [" + modules[i].name + "]");
      }
      chosen[i] = any = true;
    }
    if (!any) {
      throw util::ConfigError(
          "peft.lora.target_modules entry '" + pattern + "' matches no linear layer of the model",
          "name Hugging Face modules (a name matches the whole module name or its last parts), e.g. " + some_of(names));
    }
  }
  std::vector<model::HfLinear> out;
  for (size_t i = 0; i < modules.size(); ++i) {
    if (chosen[i] || (all_linear && !modules[i].output_layer)) out.push_back(modules[i]);
  }
  return out;
}

std::set<std::string> saved_module_params(const std::vector<model::HfParameter>& hf_parameters,
                                          const std::vector<std::string>& modules_to_save) {
  std::set<std::string> full;
  for (const auto& wanted : modules_to_save) {
    bool any = false;
    for (const auto& p : hf_parameters) {
      // A module is saved when the entry names it or a module above it (RoBERTa's "classifier"
      // holds classifier.dense and classifier.out_proj), as peft wraps the module it names whole.
      size_t matched = 0;
      for (const auto& m : p.modules) {
        bool hit = module_matches(wanted, m);
        for (size_t dot = m.find('.'); !hit && dot != std::string::npos; dot = m.find('.', dot + 1)) {
          hit = module_matches(wanted, m.substr(0, dot));
        }
        matched += hit;
      }
      if (matched == 0) continue;
      if (matched < p.modules.size()) {
        throw util::ConfigError("peft.modules_to_save entry '" + wanted + "' is part of " + p.param +
                                    ", which hftrain keeps fused with " + some_of(p.modules),
                                "adapt it with peft.lora.target_modules instead");
      }
      full.insert(p.param);
      any = true;
    }
    if (!any) {
      std::vector<std::string> all;
      for (const auto& p : hf_parameters) all.insert(all.end(), p.modules.begin(), p.modules.end());
      throw util::ConfigError("peft.modules_to_save entry '" + wanted + "' matches no module of the model",
                              "name Hugging Face modules, e.g. " + some_of(all));
    }
  }
  return full;
}

LoraModel attach_lora(torch::nn::Module& root, const std::vector<model::HfLinear>& targets,
                      const std::vector<model::HfParameter>& hf_parameters,
                      const std::vector<std::string>& modules_to_save, const config::LoraConfig& config) {
  LoraModel result;
  result.targets = targets;
  // Full training for the parameters that hold a module to save, whole.
  const std::set<std::string> full = saved_module_params(hf_parameters, modules_to_save);
  result.modules_to_save = modules_to_save;

  std::map<std::string, std::vector<model::HfLinear>> by_dense;
  for (const auto& t : targets) by_dense[t.dense].push_back(t);
  const auto modules = root.named_modules();
  for (const auto& [path, slices] : by_dense) {
    auto* dense = modules.contains(path) ? modules[path]->as<model::DenseImpl>() : nullptr;
    if (!dense)
      throw util::ConfigError("LoRA target " + slices.front().name + ": the model has no linear layer " + path);
    auto adapter = std::make_shared<LoraAdapterImpl>(slices, config, *dense);
    adapter->train(dense->is_training());  // a new module starts in training mode; follow the layer's
    dense->set_adapter(adapter);
  }
  for (auto& item : root.named_parameters(/*recurse=*/true)) {
    const std::string& name = item.key();
    const bool adapter = name.find(".lora.") != std::string::npos;
    const bool train = adapter || full.contains(name);
    item.value().requires_grad_(train);
    if (train) {
      result.trainable.push_back(name);
      result.trainable_parameters += item.value().numel();
    } else {
      result.frozen_parameters += item.value().numel();
    }
  }
  return result;
}

std::map<std::string, std::shared_ptr<LoraAdapterImpl>> lora_adapters(torch::nn::Module& root) {
  std::map<std::string, std::shared_ptr<LoraAdapterImpl>> out;
  for (const auto& item : root.named_modules()) {
    if (auto adapter = std::dynamic_pointer_cast<LoraAdapterImpl>(item.value())) {
      const std::string& path = item.key();
      out[path.substr(0, path.size() - std::string(".lora").size())] = adapter;
    }
  }
  return out;
}

}  // namespace hftrain::peft
