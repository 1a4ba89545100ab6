// What the optimizer tests share: parameter groups, copies and comparisons of parameters and of
// optimizer states, and a state that must be refused.
#pragma once

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "optim/optimizer.h"
#include "util/error.h"

namespace hftrain::test {

inline double max_abs_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kFloat64) - b.to(torch::kFloat64)).abs().max().item<double>();
}

// Two groups: `decay` (with weight decay) first, then the rest, in parameter order.
inline std::vector<optim::ParamGroup> groups_of(const optim::NamedParams& params, const std::set<std::string>& decay,
                                                double lr, double weight_decay) {
  std::vector<optim::ParamGroup> groups(2);
  for (auto& g : groups) g.base_lr = g.lr = lr;
  groups[0].weight_decay = weight_decay;
  for (const auto& [name, p] : params) {
    auto& g = groups[decay.count(name) ? 0 : 1];
    g.names.push_back(name);
    g.params.push_back(p);
  }
  return groups;
}

inline optim::NamedParams clone_params(const optim::NamedParams& params) {
  optim::NamedParams out;
  for (const auto& [name, p] : params) out.emplace_back(name, p.detach().clone().set_requires_grad(true));
  return out;
}

// Bit for bit; the names of those that differ go to the test's log.
inline bool same_params(const optim::NamedParams& a, const optim::NamedParams& b) {
  bool same = true;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!torch::equal(a[i].second, b[i].second)) {
      UNSCOPED_INFO(a[i].first << " differs by " << max_abs_diff(a[i].second, b[i].second));
      same = false;
    }
  }
  return same;
}

// The state as a checkpoint would carry it: tensors on the CPU, meta through JSON text.
inline optim::OptimizerState through_cpu(const optim::OptimizerState& s) {
  optim::OptimizerState out;
  for (const auto& [key, t] : s.tensors) out.tensors.emplace_back(key, t.detach().to(torch::kCPU).clone());
  out.meta = nlohmann::json::parse(s.meta.dump());
  return out;
}

inline bool same_tensors(const optim::OptimizerState& a, const optim::OptimizerState& b) {
  if (a.tensors.size() != b.tensors.size()) return false;
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    if (a.tensors[i].first != b.tensors[i].first || !torch::equal(a.tensors[i].second, b.tensors[i].second)) {
      return false;
    }
  }
  return true;
}

inline bool same_state(const optim::OptimizerState& a, const optim::OptimizerState& b) {
  return a.meta == b.meta && same_tensors(a, b);
}

// The message of the CheckpointError that loading `state` must throw.
inline std::string load_error(optim::Optimizer& opt, const optim::OptimizerState& state) {
  try {
    opt.load_state(state);
  } catch (const util::CheckpointError& e) {
    return e.what();
  }
  FAIL("expected a CheckpointError");
  return {};
}

}  // namespace hftrain::test
