// LoRA (Hu et al., 2021) as the peft library defines it: a frozen linear layer W gains a trainable
// low-rank update, y = W x + b + scale * B (A (dropout x)), with A (r x in), B (out x r), scale =
// alpha / r (alpha / sqrt(r) with rsLoRA). A starts as peft's kaiming-uniform (bound 1/sqrt(in)) or
// N(0, 1/r) (init gaussian); B starts at zero, so training starts from the base model exactly.
//
// DoRA (Liu et al., 2024; peft's use_dora) adds a trained magnitude m per output row: the adapted
// rows compute m / ||W + scale B A||_row * (W + scale B A) x + b, the row norms held constant in
// the backward (the paper's section 4.3, as peft does), in peft's form
//   y + (m / n - 1) * (W x) + (m / n) * scale * B A x,   n = ||W + scale (B A).detach()||_row,
// with W x recomputed on the dropped-out input when dropout is on. m starts at ||W||_row (B = 0),
// so training starts from the base model exactly here too.
//
// hftrain fuses some of Hugging Face's linear layers (q/k/v into qkv_proj, gate/up into
// gate_up_proj). A LoRA target is a Hugging Face module (model/hf/hf_modules.h), so an adapted fused
// layer carries one adapter per adapted slice of its output rows, each with peft's shapes and
// names: what peft saves for q_proj is exactly the q slice's A and B.
//
// Adapter parameters are named <dense>.lora.<hf leaf>.{A,B} (and .magnitude with DoRA), e.g.
// layers.0.attn.qkv_proj.lora.q_proj.A: they live in the block's parameter unit, so zero3 shards
// them with their block.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <vector>

#include <torch/nn/module.h>

#include "config/config.h"
#include "model/dense.h"
#include "model/hf/hf_modules.h"

namespace hftrain::peft {

// The adapted slices of one Dense layer.
class LoraAdapterImpl : public model::DenseAdapter {
 public:
  struct Slice {
    std::string name;  // the Hugging Face leaf, e.g. "q_proj"
    int64_t row_offset = 0;
    int64_t rows = 0;
    torch::Tensor A, B;
    torch::Tensor magnitude;  // DoRA: (rows), else undefined
  };
  // `layer`: the Dense layer the adapter goes on, its weights loaded (DoRA's magnitudes start at
  // its row norms).
  LoraAdapterImpl(const std::vector<model::HfLinear>& targets, const config::LoraConfig& config,
                  const model::DenseImpl& layer);
  torch::Tensor adapt(const torch::Tensor& x, const torch::Tensor& y, const model::DenseImpl& layer) override;
  // scale * B A for each slice, placed in a zero (out x in) matrix: what merging adds to W (LoRA).
  torch::Tensor delta_weight(int64_t out_features, int64_t in_features) const;
  // The layer's weight `weight` (out x in) with the adapters merged, fp32: W + scale B A per
  // slice, and with DoRA those rows times m / ||W + scale B A||_row.
  torch::Tensor merged_weight(const torch::Tensor& weight) const;
  bool dora() const { return dora_; }
  const std::vector<Slice>& slices() const { return slices_; }
  double scale() const { return scale_; }

 private:
  std::vector<Slice> slices_;
  double scale_ = 1;
  double dropout_ = 0;
  bool dora_ = false;
};

// The scale peft applies: alpha / r, or alpha / sqrt(r) with rsLoRA.
double lora_scale(const config::LoraConfig& config);

// The Hugging Face modules peft.lora.target_modules selects among `modules` (model/hf/hf_modules.h):
// each entry a glob matched against the whole module name or any of its dot-separated tails (so
// q_proj matches model.layers.0.self_attn.q_proj, as peft's suffix rule does); ["all-linear"]
// every linear layer but the output layer; [] peft's default for the architecture. Throws
// ConfigError for an entry that matches nothing (naming a few module names), or one that selects
// the output layer (train it in full with peft.modules_to_save instead).
std::vector<model::HfLinear> select_lora_targets(const std::vector<model::HfLinear>& modules,
                                                 const std::vector<std::string>& target_modules,
                                                 config::ModelArch arch);

// What attaching adapters did, for reports and saving.
struct LoraModel {
  std::vector<model::HfLinear> targets;                // in the model's order
  std::vector<std::string> modules_to_save;            // Hugging Face module names trained in full
  std::vector<std::string> trainable;                  // hftrain parameter names that train
  int64_t trainable_parameters = 0;
  int64_t frozen_parameters = 0;
};

// The hftrain parameters that `modules_to_save` (Hugging Face module names, matched as peft
// matches them: a module named, or one below a module named) train in full. Throws ConfigError for an entry that
// matches nothing or names part of a fused parameter.
std::set<std::string> saved_module_params(const std::vector<model::HfParameter>& hf_parameters,
                                          const std::vector<std::string>& modules_to_save);

// Attaches LoRA adapters for `targets` to the Dense layers of `root` (after its weights are
// loaded), freezes every other parameter except those of `modules_to_save` (Hugging Face module
// names, model/hf/hf_modules.h), and draws the adapters' A from the current torch seed.
LoraModel attach_lora(torch::nn::Module& root, const std::vector<model::HfLinear>& targets,
                      const std::vector<model::HfParameter>& hf_parameters,
                      const std::vector<std::string>& modules_to_save, const config::LoraConfig& config);

// The adapters of a model that has them: Dense module path -> adapter.
std::map<std::string, std::shared_ptr<LoraAdapterImpl>> lora_adapters(torch::nn::Module& root);

}  // namespace hftrain::peft
