#include "optim/lion.h"

#include <torch/torch.h>

namespace hftrain::optim {
namespace {

class Lion : public Optimizer {
 public:
  Lion(std::vector<ParamGroup> groups, double beta1, double beta2)
      : Optimizer(std::move(groups)), beta1_(beta1), beta2_(beta2) {
    for (const auto& g : groups_) {
      for (const auto& p : g.params) exp_avg_.push_back(torch::zeros_like(p, torch::MemoryFormat::Preserve));
    }
  }

  void step() override {
    torch::NoGradGuard no_grad;
    size_t k = 0;
    for (auto& g : groups_) {
      for (auto& p : g.params) {
        auto& m = exp_avg_[k++];
        if (!p.grad().defined()) continue;
        const auto& grad = p.grad();
        auto update = (m * beta1_ + grad * (1.0 - beta1_)).sign_();
        p.mul_(1.0 - g.lr * g.weight_decay);
        p.add_(update, -g.lr);
        m.mul_(beta2_).add_(grad, 1.0 - beta2_);
      }
    }
  }

 private:
  double beta1_;
  double beta2_;
  std::vector<torch::Tensor> exp_avg_;  // one per parameter, in group order
};

}  // namespace

std::unique_ptr<Optimizer> make_lion(std::vector<ParamGroup> groups, double beta1, double beta2) {
  return std::make_unique<Lion>(std::move(groups), beta1, beta2);
}

}  // namespace hftrain::optim
