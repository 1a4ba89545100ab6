#include "optim/ema.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include <ATen/ops/_foreach_mul.h>
#include <ATen/ops/_foreach_sub.h>
#include <torch/torch.h>

#include "util/error.h"

namespace hftrain::optim {
namespace {

constexpr const char* kKey = kEmaKey;
const std::string kSuffix = std::string("/") + kKey;
// At most this many elements of differences exist at once during an update (64 MiB in fp32).
constexpr int64_t kChunkElements = int64_t{1} << 24;

bool is_average(const std::string& name) {
  return name.size() > kSuffix.size() && name.compare(name.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0;
}

[[noreturn]] void fail(const std::string& message) {
  throw util::CheckpointError("optimizer state: " + message,
                              "the checkpoint's EMA weights do not fit this run's model; resume with the model it "
                              "was saved with, or set trainer.ema.enabled=false to drop them");
}

}  // namespace

double ema_decay(const config::EmaConfig& config, int64_t update) {
  const int64_t n = update - config.start_step - 1;
  if (n <= 0) return 0.0;
  const auto steps = static_cast<double>(n);
  double d = config.decay;
  if (config.warmup == config::EmaWarmup::kInverse) d = std::min(d, (1.0 + steps) / (10.0 + steps));
  if (config.warmup == config::EmaWarmup::kPower) {
    d = std::min(d, 1.0 - std::pow(1.0 + steps / config.inv_gamma, -config.power));
  }
  return std::max(d, config.min_decay);
}

EmaWeights::EmaWeights(std::unique_ptr<Optimizer> inner, const config::EmaConfig& config)
    : Optimizer(inner->groups()), inner_(std::move(inner)), config_(config) {
  for (const auto& g : groups_) {
    for (const auto& p : g.params) params_.push_back(p);
  }
  averages_.resize(params_.size());
}

void EmaWeights::set_lr_factor(double factor) {
  Optimizer::set_lr_factor(factor);
  inner_->set_lr_factor(factor);
}

void EmaWeights::skip_next_if(torch::Tensor flag) {
  inner_->skip_next_if(flag);
  Optimizer::skip_next_if(std::move(flag));
}

void EmaWeights::step() {
  if (swapped_) throw std::logic_error("EmaWeights::step: the parameters hold the average; hold_weights_for(kTrain)");
  torch::NoGradGuard no_grad;
  // The average starts from the weights before the first step (or, EMA turned on at a resume, the
  // loaded ones).
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!averages_[i].defined())
      averages_[i] = params_[i].detach().to(torch::kFloat32, /*non_blocking=*/false, /*copy=*/true);
  }
  inner_->step();
  ++steps_;
  if (steps_ % config_.every != 0) return;
  ++updates_;
  update(ema_decay(config_, updates_));
}

void EmaWeights::update(double decay) {
  // diffusers' arithmetic: average -= (1 - decay) (average - weights), in chunks of tensors on one
  // device (the differences are the only memory it takes).
  const double rate = 1.0 - decay;
  // A dropped step leaves the average alone: the rate times (1 - flag), on the device, once.
  const torch::Tensor masked =
      skip_flag_.defined() ? (1.0 - skip_flag_.to(torch::kFloat32)).mul_(rate) : torch::Tensor();
  size_t begin = 0;
  while (begin < params_.size()) {
    size_t end = begin;
    int64_t elements = 0;
    const torch::Device device = params_[begin].device();
    std::vector<torch::Tensor> averages, weights;
    while (end < params_.size() && params_[end].device() == device &&
           (end == begin || elements + params_[end].numel() <= kChunkElements)) {
      elements += params_[end].numel();
      averages.push_back(averages_[end]);
      weights.push_back(params_[end].detach());
      ++end;
    }
    std::vector<torch::Tensor> diffs = at::_foreach_sub(averages, weights);
    if (masked.defined()) {
      at::_foreach_mul_(diffs, masked.to(device));  // a no-op move on the flag's own device
    } else {
      at::_foreach_mul_(diffs, rate);
    }
    at::_foreach_sub_(averages, diffs);
    begin = end;
  }
}

void EmaWeights::swap_all() {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!averages_[i].defined()) continue;
    torch::Tensor p = params_[i].detach();
    const torch::Tensor held = p.clone();
    p.copy_(averages_[i]);
    averages_[i].copy_(held);
  }
  swapped_ = !swapped_;
}

bool EmaWeights::hold_weights_for(Use use) {
  bool changed = inner_->hold_weights_for(use);
  const bool average = (use == Use::kEvaluate && config_.evaluate) || (use == Use::kExport && config_.export_final);
  if (average != swapped_) {
    bool any = false;
    for (const auto& a : averages_) any = any || a.defined();
    swap_all();
    changed = changed || any;
  }
  return changed;
}

bool EmaWeights::keeps_two_points() const {
  return config_.evaluate || config_.export_final || inner_->keeps_two_points();
}

OptimizerState EmaWeights::state() const {
  OptimizerState out = inner_->state();
  size_t index = 0;
  for (const auto& g : groups_) {
    for (const auto& name : g.names) {
      const size_t i = index++;
      if (!averages_[i].defined()) continue;
      // While the parameters hold the average, they are where it lives.
      out.tensors.emplace_back(name + kSuffix, swapped_ ? params_[i].detach() : averages_[i]);
    }
  }
  out.meta[kKey] = {{"steps", steps_}, {"updates", updates_}};
  return out;
}

void EmaWeights::load_state(const OptimizerState& state) {
  OptimizerState inner_state;
  inner_state.meta = state.meta;
  std::map<std::string, torch::Tensor> saved;
  for (const auto& [name, t] : state.tensors) {
    if (is_average(name)) {
      saved.emplace(name.substr(0, name.size() - kSuffix.size()), t);
    } else {
      inner_state.tensors.emplace_back(name, t);
    }
  }
  int64_t steps = 0, updates = 0;
  if (state.meta.is_object() && state.meta.contains(kKey)) {
    const auto& m = state.meta[kKey];
    if (!m.is_object() || !m.contains("steps") || !m.contains("updates") || !m["steps"].is_number_integer() ||
        !m["updates"].is_number_integer() || m["steps"].get<int64_t>() < 0 || m["updates"].get<int64_t>() < 0) {
      fail("meta \"ema\" is not {\"steps\": n, \"updates\": n}: " + m.dump());
    }
    steps = m["steps"].get<int64_t>();
    updates = m["updates"].get<int64_t>();
  } else if (!saved.empty()) {
    fail("EMA weights without meta \"ema\"");
  }
  // Every saved average checked before anything changes.
  std::vector<torch::Tensor> loaded(params_.size());
  size_t index = 0, used = 0;
  for (const auto& g : groups_) {
    for (const auto& name : g.names) {
      const size_t i = index++;
      const auto it = saved.find(name);
      if (it == saved.end()) continue;
      const torch::Tensor& t = it->second;
      // Whole parameters in their shape; a strategy's flat pieces (1-D) by their element count.
      const bool fits = t.sizes() == params_[i].sizes() || (params_[i].dim() == 1 && t.numel() == params_[i].numel());
      if (!fits) {
        std::ostringstream shapes;
        shapes << t.sizes() << " for a parameter of " << params_[i].sizes();
        fail("EMA weights `" + name + kSuffix + "` have shape " + shapes.str());
      }
      if (t.scalar_type() != torch::kFloat32) {
        fail("EMA weights `" + name + kSuffix + "` are " + std::string(c10::toString(t.scalar_type())) +
             ", not float32");
      }
      // Converted here, before anything changes.
      loaded[i] = t.to(params_[i].device(), torch::kFloat32, false, /*copy=*/true).reshape(params_[i].sizes());
      ++used;
    }
  }
  if (used != saved.size()) {
    for (const auto& [name, t] : saved) {
      bool known = false;
      for (const auto& g : groups_) known = known || std::find(g.names.begin(), g.names.end(), name) != g.names.end();
      if (!known) fail("EMA weights `" + name + kSuffix + "` of a parameter this optimizer does not step");
    }
  }
  inner_->load_state(inner_state);  // throws before anything here changes
  averages_ = std::move(loaded);
  steps_ = steps;
  updates_ = updates;
  swapped_ = false;  // the parameters hold the loaded (trained) weights
}

std::unique_ptr<Optimizer> with_ema(std::unique_ptr<Optimizer> inner, const config::EmaConfig& config) {
  if (!config.enabled) return inner;
  return std::make_unique<EmaWeights>(std::move(inner), config);
}

}  // namespace hftrain::optim
