#include "optim/adagrad.h"

#include <torch/torch.h>

#include "optim/state_io.h"

namespace hftrain::optim {
namespace {

constexpr const char* kName = "adagrad";

class Adagrad : public Optimizer {
 public:
  Adagrad(std::vector<ParamGroup> groups, const AdagradSettings& s) : Optimizer(std::move(groups)), s_(s) {
    for (const auto& g : groups_) state_.resize(state_.size() + g.params.size());
  }

  void step() override {
    torch::NoGradGuard no_grad;
    size_t k = 0;
    for (auto& g : groups_) {
      std::vector<at::Tensor> params, grads, sums;
      std::vector<at::Scalar> minus_clr;
      for (auto& p : g.params) {
        ParamState& st = state_[k++];
        if (!p.grad().defined()) continue;
        if (!st.sum.defined())
          st.sum = torch::full_like(p, s_.initial_accumulator_value, torch::MemoryFormat::Preserve);
        ++st.step;
        params.push_back(p);
        grads.push_back(p.grad());
        sums.push_back(st.sum);
        minus_clr.emplace_back(-g.lr / (1 + static_cast<double>(st.step - 1) * s_.lr_decay));
      }
      if (params.empty()) continue;
      // As torch.optim.Adagrad: g += wd p (a new tensor: the gradient itself stays); sum += g * g;
      // p += -clr * g / (sqrt(sum) + eps).
      if (g.weight_decay != 0) grads = at::_foreach_add(grads, params, g.weight_decay);
      at::_foreach_addcmul_(sums, grads, grads, 1.0);
      std::vector<at::Tensor> std_dev = at::_foreach_sqrt(sums);
      at::_foreach_add_(std_dev, s_.eps);
      at::_foreach_addcdiv_(params, grads, std_dev, minus_clr);
    }
  }

  OptimizerState state() const override {
    OptimizerState out;
    out.meta = detail::base_meta(kName, groups_);
    out.meta["steps"] = detail::export_param_states(
        groups_, state_, [&](const std::string& name, const ParamState& st) -> std::optional<int64_t> {
          if (!st.sum.defined()) return std::nullopt;
          detail::add_tensor(out, name, "sum", st.sum);
          return st.step;
        });
    out.meta["hyperparameters"] = {{"lr_decay", s_.lr_decay},
                                   {"initial_accumulator_value", s_.initial_accumulator_value},
                                   {"eps", s_.eps}};
    return out;
  }

  void load_state(const OptimizerState& state) override {
    detail::StateLayout layout{kName, /*counts_steps=*/true, [](size_t, size_t, const torch::Tensor& p) {
                                 return std::vector<detail::TensorSpec>{{"sum", p.sizes().vec(), p.scalar_type()}};
                               }};
    std::vector<detail::LoadedParam> loaded = detail::check_and_copy(state, groups_, layout);
    std::vector<ParamState> fresh(loaded.size());
    for (size_t k = 0; k < loaded.size(); ++k) {
      if (!loaded[k].has_state) continue;
      fresh[k].sum = loaded[k].tensors[0];
      fresh[k].step = loaded[k].step;
    }
    state_ = std::move(fresh);
  }

 private:
  struct ParamState {
    torch::Tensor sum;  // undefined until the parameter's first step with a gradient
    int64_t step = 0;
  };

  AdagradSettings s_;
  std::vector<ParamState> state_;  // one per parameter, in group order
};

}  // namespace

std::unique_ptr<Optimizer> make_adagrad(std::vector<ParamGroup> groups, const AdagradSettings& settings) {
  return std::make_unique<Adagrad>(std::move(groups), settings);
}

}  // namespace hftrain::optim
