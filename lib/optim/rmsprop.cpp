#include "optim/rmsprop.h"

#include <torch/torch.h>

#include "optim/state_io.h"

namespace hftrain::optim {
namespace {

constexpr const char* kName = "rmsprop";

class Rmsprop : public Optimizer {
 public:
  Rmsprop(std::vector<ParamGroup> groups, const RmspropSettings& s) : Optimizer(std::move(groups)), s_(s) {
    for (const auto& g : groups_) state_.resize(state_.size() + g.params.size());
  }

  void step() override {
    torch::NoGradGuard no_grad;
    size_t k = 0;
    for (auto& g : groups_) {
      std::vector<at::Tensor> params, grads, square_avgs, grad_avgs, buffers;
      for (auto& p : g.params) {
        ParamState& st = state_[k++];
        if (!p.grad().defined()) continue;
        if (!st.square_avg.defined()) {
          st.square_avg = torch::zeros_like(p, torch::MemoryFormat::Preserve);
          if (s_.momentum > 0) st.momentum_buffer = torch::zeros_like(p, torch::MemoryFormat::Preserve);
          if (s_.centered) st.grad_avg = torch::zeros_like(p, torch::MemoryFormat::Preserve);
        }
        ++st.step;
        params.push_back(p);
        grads.push_back(p.grad());
        square_avgs.push_back(st.square_avg);
        if (s_.momentum > 0) buffers.push_back(st.momentum_buffer);
        if (s_.centered) grad_avgs.push_back(st.grad_avg);
      }
      if (params.empty()) continue;
      if (g.weight_decay != 0) grads = at::_foreach_add(grads, params, g.weight_decay);
      at::_foreach_mul_(square_avgs, s_.alpha);
      at::_foreach_addcmul_(square_avgs, grads, grads, 1.0 - s_.alpha);
      std::vector<at::Tensor> avg;
      if (s_.centered) {
        at::_foreach_lerp_(grad_avgs, grads, 1.0 - s_.alpha);
        avg = at::_foreach_addcmul(square_avgs, grad_avgs, grad_avgs, -1.0);
        at::_foreach_sqrt_(avg);
      } else {
        avg = at::_foreach_sqrt(square_avgs);
      }
      at::_foreach_add_(avg, s_.eps);
      if (s_.momentum > 0) {
        at::_foreach_mul_(buffers, s_.momentum);
        at::_foreach_addcdiv_(buffers, grads, avg, 1.0);
        at::_foreach_add_(params, buffers, -g.lr);
      } else {
        at::_foreach_addcdiv_(params, grads, avg, -g.lr);
      }
    }
  }

  OptimizerState state() const override {
    OptimizerState out;
    out.meta = detail::base_meta(kName, groups_);
    out.meta["steps"] = detail::export_param_states(
        groups_, state_, [&](const std::string& name, const ParamState& st) -> std::optional<int64_t> {
          if (!st.square_avg.defined()) return std::nullopt;
          detail::add_tensor(out, name, "square_avg", st.square_avg);
          detail::add_tensor(out, name, "momentum_buffer", st.momentum_buffer);
          detail::add_tensor(out, name, "grad_avg", st.grad_avg);
          return st.step;
        });
    out.meta["hyperparameters"] = {
        {"alpha", s_.alpha}, {"eps", s_.eps}, {"momentum", s_.momentum}, {"centered", s_.centered}};
    return out;
  }

  void load_state(const OptimizerState& state) override {
    detail::StateLayout layout{kName, /*counts_steps=*/true, [this](size_t, size_t, const torch::Tensor& p) {
                                 const std::vector<int64_t> shape = p.sizes().vec();
                                 std::vector<detail::TensorSpec> s = {{"square_avg", shape, p.scalar_type()}};
                                 if (s_.momentum > 0) s.push_back({"momentum_buffer", shape, p.scalar_type()});
                                 if (s_.centered) s.push_back({"grad_avg", shape, p.scalar_type()});
                                 return s;
                               }};
    std::vector<detail::LoadedParam> loaded = detail::check_and_copy(state, groups_, layout);
    std::vector<ParamState> fresh(loaded.size());
    for (size_t k = 0; k < loaded.size(); ++k) {
      if (!loaded[k].has_state) continue;
      size_t i = 0;
      fresh[k].square_avg = loaded[k].tensors[i++];
      if (s_.momentum > 0) fresh[k].momentum_buffer = loaded[k].tensors[i++];
      if (s_.centered) fresh[k].grad_avg = loaded[k].tensors[i++];
      fresh[k].step = loaded[k].step;
    }
    state_ = std::move(fresh);
  }

 private:
  struct ParamState {
    torch::Tensor square_avg, momentum_buffer, grad_avg;  // undefined until the first step with a gradient
    int64_t step = 0;
  };

  RmspropSettings s_;
  std::vector<ParamState> state_;  // one per parameter, in group order
};

}  // namespace

std::unique_ptr<Optimizer> make_rmsprop(std::vector<ParamGroup> groups, const RmspropSettings& settings) {
  return std::make_unique<Rmsprop>(std::move(groups), settings);
}

}  // namespace hftrain::optim
