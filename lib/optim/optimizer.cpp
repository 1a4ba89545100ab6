#include "optim/optimizer.h"

#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include "optim/adafactor.h"
#include "optim/lion.h"
#include "optim/param_groups.h"

namespace hftrain::optim {
namespace {

// LibTorch's own optimizers, one torch param group per hftrain group.
template <class TorchOptimizer, class Options>
class TorchBacked : public Optimizer {
 public:
  TorchBacked(std::vector<ParamGroup> groups, const Options& base) : Optimizer(std::move(groups)) {
    std::vector<torch::optim::OptimizerParamGroup> torch_groups;
    for (const auto& g : groups_) {
      auto options = std::make_unique<Options>(base);
      options->lr(g.lr);
      options->weight_decay(g.weight_decay);
      torch_groups.emplace_back(g.params, std::move(options));
    }
    impl_ = std::make_unique<TorchOptimizer>(torch_groups, base);
  }

  void step() override {
    apply_lrs();
    impl_->step();
  }

 protected:
  void apply_lrs() override {
    auto& torch_groups = impl_->param_groups();
    for (size_t i = 0; i < groups_.size(); ++i) torch_groups[i].options().set_lr(groups_[i].lr);
  }

 private:
  std::unique_ptr<TorchOptimizer> impl_;
};

}  // namespace

void Optimizer::zero_grad() {
  for (auto& g : groups_) {
    for (auto& p : g.params) p.mutable_grad() = torch::Tensor();
  }
}

void Optimizer::set_lr_factor(double factor) {
  for (auto& g : groups_) g.lr = g.base_lr * factor;
}

std::unique_ptr<Optimizer> make_optimizer(const config::OptimizerConfig& config, const NamedParams& params) {
  std::vector<std::string> names;
  for (const auto& [name, tensor] : params) names.push_back(name);
  const Grouping grouping = group_parameters(names, config);
  std::vector<ParamGroup> groups(grouping.groups.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    groups[g].base_lr = groups[g].lr = grouping.groups[g].lr;
    groups[g].weight_decay = grouping.groups[g].weight_decay;
  }
  for (size_t i = 0; i < params.size(); ++i) {
    auto& g = groups[grouping.group_of[i]];
    g.names.push_back(params[i].first);
    g.params.push_back(params[i].second);
  }

  const double beta1 = config.beta1.value_or(0.9);
  switch (config.name) {
    case config::OptimizerName::kAdamW: {
      torch::optim::AdamWOptions o(config.lr);
      o.betas({beta1, config.beta2.value_or(0.999)}).eps(config.eps).weight_decay(config.weight_decay);
      return std::make_unique<TorchBacked<torch::optim::AdamW, torch::optim::AdamWOptions>>(std::move(groups), o);
    }
    case config::OptimizerName::kSgd: {
      torch::optim::SGDOptions o(config.lr);
      o.momentum(config.momentum).nesterov(config.nesterov).weight_decay(config.weight_decay);
      return std::make_unique<TorchBacked<torch::optim::SGD, torch::optim::SGDOptions>>(std::move(groups), o);
    }
    case config::OptimizerName::kAdafactor:
      return make_adafactor(std::move(groups), config.adafactor);
    case config::OptimizerName::kLion:
      return make_lion(std::move(groups), beta1, config.beta2.value_or(0.99));
  }
  return nullptr;
}

}  // namespace hftrain::optim
