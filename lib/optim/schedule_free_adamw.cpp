#include "optim/schedule_free_adamw.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include <torch/torch.h>

#include "optim/state_io.h"
#include "util/error.h"

namespace hftrain::optim {
namespace {

constexpr const char* kName = "schedule_free_adamw";

[[noreturn]] void fail(const std::string& message) {
  throw util::CheckpointError(
      "optimizer state: " + message,
      "the checkpoint's optimizer state does not fit this run's model and optimizer settings; "
      "resume with the settings it was saved with, or start a new run");
}

}  // namespace

ScheduleFreeAdamW::ScheduleFreeAdamW(std::vector<ParamGroup> groups,
                                     const ScheduleFreeSettings& settings)
    : Optimizer(std::move(groups)), settings_(settings), group_state_(groups_.size()) {
  size_t n = 0;
  for (const auto& g : groups_) n += g.params.size();
  z_.resize(n);
  exp_avg_sq_.resize(n);
}

// The package's arithmetic in its order, scalars in double as Python computes them; per parameter
// rather than its multi-tensor (_foreach) calls, which run the same kernels one tensor at a time on
// the CPU, so that the gradient need not be overwritten.
void ScheduleFreeAdamW::step() {
  if (!train_mode_) {
    throw std::logic_error(
        "schedule-free AdamW: step() in eval mode; call train_mode() after evaluating or saving");
  }
  torch::NoGradGuard no_grad;
  const double beta1 = settings_.beta1, beta2 = settings_.beta2;
  size_t index = 0;
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    auto& g = groups_[gi];
    auto& gs = group_state_[gi];
    const double step = static_cast<double>(gs.k + 1);
    const double sched =
        gs.k < settings_.warmup_steps ? step / static_cast<double>(settings_.warmup_steps) : 1.0;
    const double bias_correction2 = 1.0 - std::pow(beta2, step);
    const double lr = g.lr * sched;
    gs.lr_max = std::max(lr, gs.lr_max);
    const double weight =
        std::pow(step, settings_.r) * std::pow(gs.lr_max, settings_.weight_lr_power);
    gs.weight_sum += weight;
    const double ckp1 = gs.weight_sum == 0.0 ? 0.0 : weight / gs.weight_sum;

    for (auto& y : g.params) {
      auto& z = z_[index];
      auto& v = exp_avg_sq_[index];
      ++index;
      const torch::Tensor& grad = y.grad();
      if (!grad.defined()) continue;
      if (!z.defined()) {
        z = y.detach().clone(torch::MemoryFormat::Preserve);
        v = torch::zeros_like(y, torch::MemoryFormat::Preserve);
      }
      v.mul_(beta2).addcmul_(grad, grad, 1.0 - beta2);
      torch::Tensor u = v.div(bias_correction2).sqrt_().add_(settings_.eps);
      at::div_out(u, grad, u);  // grad / denom, into the denominator's memory
      if (g.weight_decay != 0.0) u.add_(y, g.weight_decay);  // weight decay at y
      y.lerp_(z, ckp1);
      y.add_(u, lr * (beta1 * (1.0 - ckp1) - 1.0));
      z.sub_(u, lr);
    }
    ++gs.k;
  }
}

bool ScheduleFreeAdamW::set_mode(bool train) {
  if (train == train_mode_) return false;
  torch::NoGradGuard no_grad;
  // y = lerp(x, z, 1 - beta1); x = lerp(y, z, 1 - 1 / beta1).
  const double weight = train ? 1.0 - settings_.beta1 : 1.0 - 1.0 / settings_.beta1;
  bool changed = false;
  size_t index = 0;
  for (auto& g : groups_) {
    for (auto& p : g.params) {
      const auto& z = z_[index++];
      if (z.defined()) p.lerp_(z, weight), changed = true;
    }
  }
  train_mode_ = train;
  return changed;
}

void ScheduleFreeAdamW::train_mode() {
  set_mode(true);
}
void ScheduleFreeAdamW::eval_mode() {
  set_mode(false);
}
bool ScheduleFreeAdamW::hold_weights_for(Use use) {
  return set_mode(use == Use::kTrain);
}

OptimizerState ScheduleFreeAdamW::state() const {
  OptimizerState out;
  out.meta = detail::base_meta(kName, groups_);
  size_t index = 0;
  for (const auto& g : groups_) {
    for (const auto& name : g.names) {
      detail::add_tensor(out, name, "z", z_[index]);
      detail::add_tensor(out, name, "exp_avg_sq", exp_avg_sq_[index]);
      ++index;
    }
  }
  out.meta["train_mode"] = train_mode_;
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& gs : group_state_)
    groups.push_back({{"k", gs.k}, {"weight_sum", gs.weight_sum}, {"lr_max", gs.lr_max}});
  out.meta["schedule_free"] = std::move(groups);
  out.meta["hyperparameters"] = {{"betas", {settings_.beta1, settings_.beta2}},
                                 {"eps", settings_.eps},
                                 {"warmup_steps", settings_.warmup_steps},
                                 {"r", settings_.r},
                                 {"weight_lr_power", settings_.weight_lr_power}};
  return out;
}

void ScheduleFreeAdamW::load_state(const OptimizerState& state) {
  detail::StateLayout layout{kName, /*counts_steps=*/false, [](size_t, size_t, const torch::Tensor& p) {
                               const std::vector<int64_t> shape = p.sizes().vec();
                               return std::vector<detail::TensorSpec>{
                                   {"z", shape, p.scalar_type()},
                                   {"exp_avg_sq", shape, p.scalar_type()}};
                             }};
  std::vector<detail::LoadedParam> loaded = detail::check_and_copy(state, groups_, layout);

  // check_and_copy has checked meta's identity, format and "groups"; now the schedule-free fields.
  const nlohmann::json& meta = state.meta;
  auto mode = meta.find("train_mode");
  if (mode == meta.end() || !mode->is_boolean())
    fail("meta \"train_mode\" is missing or not a boolean");
  auto saved = meta.find("schedule_free");
  const nlohmann::json& saved_groups = meta.at("groups");
  if (saved == meta.end() || !saved->is_array() || saved->size() != saved_groups.size()) {
    fail("meta \"schedule_free\" is missing or not an array with one entry per saved group");
  }
  std::vector<GroupState> saved_state;
  for (const auto& e : *saved) {
    if (!e.is_object() || !e.contains("k") || !e["k"].is_number_integer() ||
        e["k"].get<int64_t>() < 0 || !e.contains("weight_sum") || !e["weight_sum"].is_number() ||
        !e.contains("lr_max") || !e["lr_max"].is_number()) {
      fail(
          "meta \"schedule_free\" entries must be objects with \"k\" (an integer >= 0), "
          "\"weight_sum\" and \"lr_max\" (numbers); found " +
          e.dump());
    }
    saved_state.push_back(
        {e["k"].get<int64_t>(), e["weight_sum"].get<double>(), e["lr_max"].get<double>()});
  }
  std::unordered_map<std::string, size_t> saved_group_of;
  for (size_t i = 0; i < saved_groups.size(); ++i) {
    for (const auto& n : saved_groups[i]["params"]) saved_group_of[n.get<std::string>()] = i;
  }
  std::vector<GroupState> fresh_groups(groups_.size());
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    const auto& names = groups_[gi].names;
    for (size_t i = 0; i < names.size(); ++i) {
      const GroupState& s = saved_state[saved_group_of.at(names[i])];
      const GroupState& first = saved_state[saved_group_of.at(names[0])];
      if (s.k != first.k || s.weight_sum != first.weight_sum || s.lr_max != first.lr_max) {
        fail("parameters '" + names[0] + "' and '" + names[i] +
             "' share a group in this run but come from saved groups with different schedule-free "
             "step counts or averaging weights");
      }
    }
    if (!names.empty()) fresh_groups[gi] = saved_state[saved_group_of.at(names[0])];
  }

  std::vector<torch::Tensor> z(loaded.size()), v(loaded.size());
  for (size_t k = 0; k < loaded.size(); ++k) {
    if (!loaded[k].has_state) continue;
    z[k] = loaded[k].tensors[0];
    v[k] = loaded[k].tensors[1];
  }
  z_ = std::move(z);
  exp_avg_sq_ = std::move(v);
  group_state_ = std::move(fresh_groups);
  train_mode_ = mode->get<bool>();
}

std::unique_ptr<ScheduleFreeAdamW> make_schedule_free_adamw(std::vector<ParamGroup> groups,
                                                            const ScheduleFreeSettings& settings) {
  return std::make_unique<ScheduleFreeAdamW>(std::move(groups), settings);
}

}  // namespace hftrain::optim
