#include "optim/optimizer.h"

#include <torch/optim/sgd.h>

#include "optim/adafactor.h"
#include "optim/fused_adamw.h"
#include "optim/lion.h"
#include "optim/param_groups.h"
#include "optim/state_io.h"

namespace hftrain::optim {
namespace {

// What TorchBacked needs to know of a LibTorch optimizer to export and import its state.
// LibTorch keys per-parameter state by the parameter's TensorImpl*, and its archive-based
// save()/load() write TorchScript archives (no pickle-free format), so we move the state ourselves.
struct SgdTraits {
  using Impl = torch::optim::SGD;
  using Options = torch::optim::SGDOptions;
  using ParamState = torch::optim::SGDParamState;
  static constexpr const char* kName = "sgd";
  static constexpr bool kCountsSteps = false;  // LibTorch's SGD keeps no step count

  static std::vector<detail::TensorSpec> specs(const Options& o, const torch::Tensor& p) {
    if (o.momentum() == 0) return {};  // plain SGD never has state
    return {{"momentum_buffer", p.sizes().vec(), p.scalar_type()}};
  }
  static int64_t export_state(const ParamState& st, const std::string& name, OptimizerState& out) {
    detail::add_tensor(out, name, "momentum_buffer", st.momentum_buffer());
    return 0;
  }
  static std::unique_ptr<ParamState> import_state(detail::LoadedParam& in) {
    auto st = std::make_unique<ParamState>();
    st->momentum_buffer(in.tensors.at(0));
    return st;
  }
  static nlohmann::json hyperparameters(const Options& o) {
    return {{"momentum", o.momentum()}, {"dampening", o.dampening()}, {"nesterov", o.nesterov()}};
  }
};

// LibTorch's own optimizers, one torch param group per hftrain group.
template <class Traits>
class TorchBacked : public Optimizer {
  using Options = typename Traits::Options;

 public:
  TorchBacked(std::vector<ParamGroup> groups, const Options& base) : Optimizer(std::move(groups)) {
    std::vector<torch::optim::OptimizerParamGroup> torch_groups;
    for (const auto& g : groups_) {
      auto options = std::make_unique<Options>(base);
      options->lr(g.lr);
      options->weight_decay(g.weight_decay);
      torch_groups.emplace_back(g.params, std::move(options));
    }
    impl_ = std::make_unique<typename Traits::Impl>(torch_groups, base);
  }

  void step() override {
    apply_lrs();
    impl_->step();
  }

  OptimizerState state() const override {
    OptimizerState out;
    out.meta = detail::base_meta(Traits::kName, groups_);
    nlohmann::json steps = nlohmann::json::object();
    const auto& torch_state = impl_->state();
    const auto& torch_groups = impl_->param_groups();
    for (size_t g = 0; g < groups_.size(); ++g) {
      for (size_t i = 0; i < groups_[g].names.size(); ++i) {
        auto it = torch_state.find(torch_groups[g].params()[i].unsafeGetTensorImpl());
        if (it == torch_state.end()) continue;
        const auto& st = static_cast<const typename Traits::ParamState&>(*it->second);
        const int64_t step = Traits::export_state(st, groups_[g].names[i], out);
        if (Traits::kCountsSteps) steps[groups_[g].names[i]] = step;
      }
    }
    if (Traits::kCountsSteps) out.meta["steps"] = std::move(steps);
    out.meta["hyperparameters"] =
        Traits::hyperparameters(static_cast<const Options&>(impl_->defaults()));
    return out;
  }

  void load_state(const OptimizerState& state) override {
    auto& torch_groups = impl_->param_groups();
    detail::StateLayout layout{
        Traits::kName, Traits::kCountsSteps, [&](size_t g, const torch::Tensor& p) {
          return Traits::specs(static_cast<const Options&>(torch_groups[g].options()), p);
        }};
    std::vector<detail::LoadedParam> loaded = detail::check_and_copy(state, groups_, layout);
    // Everything is checked and copied; only now is the optimizer touched.
    ska::flat_hash_map<void*, std::unique_ptr<torch::optim::OptimizerParamState>> fresh;
    size_t k = 0;
    for (auto& tg : torch_groups) {
      for (auto& p : tg.params()) {
        auto& in = loaded[k++];
        if (in.has_state) fresh[p.unsafeGetTensorImpl()] = Traits::import_state(in);
      }
    }
    impl_->state() = std::move(fresh);
  }

 protected:
  void apply_lrs() override {
    auto& torch_groups = impl_->param_groups();
    for (size_t i = 0; i < groups_.size(); ++i) torch_groups[i].options().set_lr(groups_[i].lr);
  }

 private:
  std::unique_ptr<typename Traits::Impl> impl_;
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
    case config::OptimizerName::kAdamW:
      return make_fused_adamw(std::move(groups), {.beta1 = beta1, .beta2 = config.beta2.value_or(0.999),
                                                  .eps = config.eps, .amsgrad = false});
    case config::OptimizerName::kSgd: {
      torch::optim::SGDOptions o(config.lr);
      o.momentum(config.momentum).nesterov(config.nesterov).weight_decay(config.weight_decay);
      return std::make_unique<TorchBacked<SgdTraits>>(std::move(groups), o);
    }
    case config::OptimizerName::kAdafactor:
      return make_adafactor(std::move(groups), config.adafactor);
    case config::OptimizerName::kLion:
      return make_lion(std::move(groups), beta1, config.beta2.value_or(0.99));
  }
  return nullptr;
}

}  // namespace hftrain::optim
