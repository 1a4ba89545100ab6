#include "optim/lion.h"

#include <torch/torch.h>

#include "optim/state_io.h"

namespace hftrain::optim {
namespace {

class Lion : public Optimizer {
 public:
  Lion(std::vector<ParamGroup> groups, double beta1, double beta2)
      : Optimizer(std::move(groups)), beta1_(beta1), beta2_(beta2) {
    for (const auto& g : groups_) exp_avg_.resize(exp_avg_.size() + g.params.size());
  }

  // Multi-tensor kernels (ATen's _foreach_*), a handful of launches per group on a GPU instead of
  // several per parameter; the same arithmetic, in the same order, as the per-tensor rule.
  void step() override {
    torch::NoGradGuard no_grad;
    size_t k = 0;
    for (auto& g : groups_) {
      std::vector<at::Tensor> params;
      std::vector<at::Tensor> grads;
      std::vector<at::Tensor> moments;
      for (auto& p : g.params) {
        auto& m = exp_avg_[k++];
        if (!p.grad().defined()) continue;
        if (!m.defined()) m = torch::zeros_like(p, torch::MemoryFormat::Preserve);
        params.push_back(p);
        grads.push_back(p.grad());
        moments.push_back(m);
      }
      if (params.empty()) continue;
      // update = sign(beta1 m + (1 - beta1) g); p <- p (1 - lr wd) - lr update; m <- beta2 m + (1 - beta2) g
      std::vector<at::Tensor> update = at::_foreach_mul(moments, beta1_);
      at::_foreach_add_(update, grads, 1.0 - beta1_);
      at::_foreach_sign_(update);
      at::_foreach_mul_(params, 1.0 - g.lr * g.weight_decay);
      at::_foreach_add_(params, update, -g.lr);
      at::_foreach_mul_(moments, beta2_);
      at::_foreach_add_(moments, grads, 1.0 - beta2_);
    }
  }

  OptimizerState state() const override {
    OptimizerState out;
    out.meta = detail::base_meta("lion", groups_);
    size_t k = 0;
    for (const auto& g : groups_) {
      for (const auto& name : g.names) detail::add_tensor(out, name, "exp_avg", exp_avg_[k++]);
    }
    out.meta["hyperparameters"] = {{"betas", {beta1_, beta2_}}};
    return out;
  }

  void load_state(const OptimizerState& state) override {
    detail::StateLayout layout{
        "lion", /*counts_steps=*/false, [](size_t, size_t, const torch::Tensor& p) {
          return std::vector<detail::TensorSpec>{{"exp_avg", p.sizes().vec(), p.scalar_type()}};
        }};
    std::vector<detail::LoadedParam> loaded = detail::check_and_copy(state, groups_, layout);
    std::vector<torch::Tensor> fresh(loaded.size());
    for (size_t k = 0; k < loaded.size(); ++k) {
      if (loaded[k].has_state) fresh[k] = loaded[k].tensors[0];
    }
    exp_avg_ = std::move(fresh);
  }

 private:
  double beta1_;
  double beta2_;
  // One per parameter, in group order; undefined until the parameter's first step with a gradient.
  std::vector<torch::Tensor> exp_avg_;
};

}  // namespace

std::unique_ptr<Optimizer> make_lion(std::vector<ParamGroup> groups, double beta1, double beta2) {
  return std::make_unique<Lion>(std::move(groups), beta1, beta2);
}

}  // namespace hftrain::optim
