#include "optim/fused_sgd.h"

#include <map>
#include <tuple>

#include <torch/torch.h>

#include "optim/state_io.h"

namespace hftrain::optim {
namespace {

constexpr const char* kName = "sgd";

class FusedSgd : public Optimizer {
 public:
  FusedSgd(std::vector<ParamGroup> groups, double momentum, bool nesterov)
      : Optimizer(std::move(groups)), momentum_(momentum), nesterov_(nesterov) {
    for (const auto& g : groups_) buffers_.resize(buffers_.size() + g.params.size());
  }

  void step() override {
    torch::NoGradGuard no_grad;
    size_t k = 0;
    for (auto& g : groups_) {
      // One call per device/dtype, and apart for parameters whose momentum buffer starts now (the
      // kernel's is_first_step sets it to the gradient, as the first step of SGD with momentum does).
      std::map<std::tuple<c10::DeviceType, c10::DeviceIndex, c10::ScalarType, bool>, Lists> sets;
      for (auto& p : g.params) {
        torch::Tensor& buf = buffers_[k++];
        if (!p.grad().defined()) continue;
        const bool first = momentum_ != 0 && !buf.defined();
        if (first) buf = torch::empty_like(p, torch::MemoryFormat::Preserve);
        Lists& l = sets[{p.device().type(), p.device().index(), p.scalar_type(), first}];
        l.params.push_back(p);
        l.grads.push_back(p.grad());
        if (momentum_ != 0) l.buffers.push_back(buf);
      }
      for (auto& set : sets) {
        Lists& l = set.second;
        at::_fused_sgd_(l.params, l.grads, l.buffers, g.weight_decay, momentum_, g.lr, /*dampening=*/0.0, nesterov_,
                        /*maximize=*/false, /*is_first_step=*/std::get<3>(set.first));
      }
    }
  }

  OptimizerState state() const override {
    OptimizerState out;
    out.meta = detail::base_meta(kName, groups_);
    size_t k = 0;
    for (const auto& g : groups_) {
      for (const auto& name : g.names) detail::add_tensor(out, name, "momentum_buffer", buffers_[k++]);
    }
    out.meta["hyperparameters"] = {{"momentum", momentum_}, {"dampening", 0.0}, {"nesterov", nesterov_},
                                   {"fused", true}};
    return out;
  }

  void load_state(const OptimizerState& state) override {
    detail::StateLayout layout{kName, /*counts_steps=*/false, [this](size_t, size_t, const torch::Tensor& p) {
                                 if (momentum_ == 0) return std::vector<detail::TensorSpec>{};  // no state
                                 return std::vector<detail::TensorSpec>{
                                     {"momentum_buffer", p.sizes().vec(), p.scalar_type()}};
                               }};
    std::vector<detail::LoadedParam> loaded = detail::check_and_copy(state, groups_, layout);
    std::vector<torch::Tensor> fresh(loaded.size());
    for (size_t k = 0; k < loaded.size(); ++k) {
      if (loaded[k].has_state && !loaded[k].tensors.empty()) fresh[k] = loaded[k].tensors[0];
    }
    buffers_ = std::move(fresh);
  }

 private:
  struct Lists {
    std::vector<torch::Tensor> params, grads, buffers;
  };

  double momentum_;
  bool nesterov_;
  std::vector<torch::Tensor> buffers_;  // one per parameter, in group order; undefined until its first step
};

}  // namespace

std::unique_ptr<Optimizer> make_fused_sgd(std::vector<ParamGroup> groups, double momentum, bool nesterov) {
  return std::make_unique<FusedSgd>(std::move(groups), momentum, nesterov);
}

}  // namespace hftrain::optim
