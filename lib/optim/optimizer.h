// The optimizer interface the training loop uses: AdamW and SGD are LibTorch's own
// implementations; Adafactor and Lion, which LibTorch lacks, are ours (adafactor.h, lion.h).
// Groups come from param_groups.h; the schedule sets each group's lr as base lr x factor.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <torch/types.h>

#include "config/config.h"

namespace hftrain::optim {

using NamedParams = std::vector<std::pair<std::string, torch::Tensor>>;

struct ParamGroup {
  std::vector<std::string> names;
  std::vector<torch::Tensor> params;
  double base_lr = 0;
  double lr = 0;  // current: base_lr x the schedule's factor
  double weight_decay = 0;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;

  // One update of every parameter with a gradient, at each group's current lr.
  virtual void step() = 0;
  void zero_grad();
  // Sets every group's lr to its base lr times `factor` (the schedule's multiplier).
  void set_lr_factor(double factor);

  const std::vector<ParamGroup>& groups() const { return groups_; }

 protected:
  explicit Optimizer(std::vector<ParamGroup> groups) : groups_(std::move(groups)) {}
  // Pushes groups_[i].lr into the implementation before a step.
  virtual void apply_lrs() {}

  std::vector<ParamGroup> groups_;
};

// Builds the optimizer named by the config over `params` (names as in the model). Throws
// ConfigError for group globs that match nothing or overlap.
std::unique_ptr<Optimizer> make_optimizer(const config::OptimizerConfig& config, const NamedParams& params);

}  // namespace hftrain::optim
