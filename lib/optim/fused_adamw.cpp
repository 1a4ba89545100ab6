#include "optim/fused_adamw.h"

#include <map>
#include <tuple>

#include <torch/torch.h>

#include "optim/state_io.h"

namespace hftrain::optim {
namespace {

constexpr const char* kName = "adamw";

class FusedAdamW : public Optimizer {
 public:
  FusedAdamW(std::vector<ParamGroup> groups, const AdamWSettings& s) : Optimizer(std::move(groups)), s_(s) {
    for (const auto& g : groups_) state_.resize(state_.size() + g.params.size());
  }

  bool skips_on_device() const override { return true; }

  void step() override {
    torch::NoGradGuard no_grad;
    size_t k = 0;
    for (auto& g : groups_) {
      // The fused kernel takes lists on one device in one dtype: one call per such set.
      std::map<std::tuple<c10::DeviceType, c10::DeviceIndex, c10::ScalarType>, Lists> sets;
      for (auto& p : g.params) {
        ParamState& st = state_[k++];
        if (!p.grad().defined()) continue;
        if (!st.exp_avg.defined()) init(st, p);
        Lists& l = sets[{p.device().type(), p.device().index(), p.scalar_type()}];
        l.params.push_back(p);
        l.grads.push_back(p.grad());
        l.exp_avgs.push_back(st.exp_avg);
        l.exp_avg_sqs.push_back(st.exp_avg_sq);
        if (s_.amsgrad) l.max_exp_avg_sqs.push_back(st.max_exp_avg_sq);
        l.steps.push_back(st.step);
      }
      for (auto& set : sets) {
        Lists& l = set.second;
        torch::_foreach_add_(l.steps, 1);  // the kernel reads the incremented count, as PyTorch's AdamW
        const std::optional<torch::Tensor> found_inf =
            skip_flag_.defined() ? std::optional<torch::Tensor>(skip_flag_) : std::nullopt;
        at::_fused_adamw_(l.params, l.grads, l.exp_avgs, l.exp_avg_sqs, l.max_exp_avg_sqs, l.steps, g.lr, s_.beta1,
                          s_.beta2, g.weight_decay, s_.eps, s_.amsgrad, /*maximize=*/false, /*grad_scale=*/{},
                          found_inf);
        // A skipped step does not count (PyTorch's fused AdamW takes the flag back off the counts).
        if (found_inf) torch::_foreach_sub_(l.steps, std::vector<torch::Tensor>(l.steps.size(), skip_flag_));
      }
    }
  }

  OptimizerState state() const override {
    OptimizerState out;
    out.meta = detail::base_meta(kName, groups_);
    out.meta["steps"] = detail::export_param_states(
        groups_, state_, [&](const std::string& name, const ParamState& st) -> std::optional<int64_t> {
          if (!st.exp_avg.defined()) return std::nullopt;
          // Every update so far skipped on the device: zero moments, as if never stepped.
          const auto steps = static_cast<int64_t>(st.step.item<float>());
          if (steps == 0) return std::nullopt;
          detail::add_tensor(out, name, "exp_avg", st.exp_avg);
          detail::add_tensor(out, name, "exp_avg_sq", st.exp_avg_sq);
          detail::add_tensor(out, name, "max_exp_avg_sq", st.max_exp_avg_sq);
          return steps;
        });
    out.meta["hyperparameters"] = {
        {"betas", {s_.beta1, s_.beta2}}, {"eps", s_.eps}, {"amsgrad", s_.amsgrad}, {"fused", true}};
    return out;
  }

  void load_state(const OptimizerState& state) override {
    detail::StateLayout layout{kName, /*counts_steps=*/true, [this](size_t, size_t, const torch::Tensor& p) {
                                 const std::vector<int64_t> shape = p.sizes().vec();
                                 std::vector<detail::TensorSpec> s = {{"exp_avg", shape, p.scalar_type()},
                                                                      {"exp_avg_sq", shape, p.scalar_type()}};
                                 if (s_.amsgrad) s.push_back({"max_exp_avg_sq", shape, p.scalar_type()});
                                 return s;
                               }};
    std::vector<detail::LoadedParam> loaded = detail::check_and_copy(state, groups_, layout);
    std::vector<ParamState> fresh(loaded.size());
    size_t k = 0;
    for (const auto& g : groups_) {
      for (const auto& p : g.params) {
        detail::LoadedParam& in = loaded[k];
        ParamState& st = fresh[k++];
        if (!in.has_state) continue;
        st.exp_avg = in.tensors[0];
        st.exp_avg_sq = in.tensors[1];
        if (s_.amsgrad) st.max_exp_avg_sq = in.tensors[2];
        st.step = torch::full({}, static_cast<float>(in.step), p.options().dtype(torch::kFloat32));
      }
    }
    state_ = std::move(fresh);
  }

 private:
  struct ParamState {
    torch::Tensor exp_avg, exp_avg_sq, max_exp_avg_sq;
    torch::Tensor step;  // () float32 on the parameter's device, as the fused kernel takes it
  };
  struct Lists {
    std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps;
  };

  void init(ParamState& st, const torch::Tensor& p) const {
    st.exp_avg = torch::zeros_like(p, torch::MemoryFormat::Preserve);
    st.exp_avg_sq = torch::zeros_like(p, torch::MemoryFormat::Preserve);
    if (s_.amsgrad) st.max_exp_avg_sq = torch::zeros_like(p, torch::MemoryFormat::Preserve);
    st.step = torch::zeros({}, p.options().dtype(torch::kFloat32));
  }

  AdamWSettings s_;
  std::vector<ParamState> state_;  // one per parameter, in group order
};

}  // namespace

std::unique_ptr<Optimizer> make_fused_adamw(std::vector<ParamGroup> groups, const AdamWSettings& settings) {
  return std::make_unique<FusedAdamW>(std::move(groups), settings);
}

}  // namespace hftrain::optim
