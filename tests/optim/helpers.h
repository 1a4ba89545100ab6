// What the optimizer tests share: parameter groups, copies and comparisons of parameters and of
// optimizer states, and a state that must be refused.
#pragma once

#include <set>
#include <string>
#include <vector>

#include <ATen/Version.h>
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

// Float32 parameters of these names and shapes, filled with cos(0.7 i + k) for the k-th (from 1):
// deterministic, distinct per parameter.
inline optim::NamedParams cos_params(const std::vector<std::pair<std::string, std::vector<int64_t>>>& shapes) {
  optim::NamedParams params;
  int64_t seed = 1;
  for (const auto& [name, shape] : shapes) {
    int64_t n = 1;
    for (auto d : shape) n *= d;
    auto t = torch::cos(torch::arange(n, torch::kFloat64) * 0.7 + static_cast<double>(seed++)).to(torch::kFloat32);
    params.emplace_back(name, t.reshape(shape).set_requires_grad(true));
  }
  return params;
}

inline optim::NamedParams clone_params(const optim::NamedParams& params) {
  optim::NamedParams out;
  for (const auto& [name, p] : params) out.emplace_back(name, p.detach().clone().set_requires_grad(true));
  return out;
}

// Whether ATen's CPU kernels here have the vector width a fixture was computed with (the
// "cpu_capability" of its metadata, e.g. "AVX2"). Only then can a CPU result equal it bit for bit:
// another width (AVX-512 on the lent GPU machines) rounds some operations differently. Warns when
// not, naming both, so a log shows why a test compared within a tolerance.
inline bool same_cpu_kernels(const nlohmann::json& fixture_meta) {
  const std::string theirs = fixture_meta.value("cpu_capability", std::string());
  const std::string ours = at::get_cpu_capability();
  if (theirs == ours) return true;
  WARN("the fixture was computed with ATen's " << (theirs.empty() ? "unrecorded" : theirs)
                                               << " CPU kernels, these are " << ours
                                               << ": compared within a tolerance, not bit for bit");
  return false;
}

// Deterministic gradients that depend on the step, the parameter and its current value, made on
// the parameter's device: "never.weight" gets none, "late.weight" none before step `late_from`.
inline void set_step_grads(optim::NamedParams& params, int step, int late_from) {
  for (size_t i = 0; i < params.size(); ++i) {
    auto& [name, p] = params[i];
    if (name == "never.weight" || (name == "late.weight" && step < late_from)) {
      p.mutable_grad() = torch::Tensor();
      continue;
    }
    auto idx = torch::arange(p.numel(), torch::kFloat64).reshape(p.sizes());
    auto g = torch::sin(idx * (0.3 + 0.1 * step) + static_cast<double>(i)).to(p.device(), p.scalar_type());
    p.mutable_grad() = g + p.detach() * 0.01;
  }
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

// Steps [from, to) with set_step_grads' gradients ("late.weight" from step 3): the low-rank and
// orthogonalising optimizers' tests step this way.
inline void step_with_late_grads(optim::Optimizer& opt, optim::NamedParams& params, int from, int to) {
  for (int step = from; step < to; ++step) {
    set_step_grads(params, step, /*late_from=*/3);
    opt.step();
  }
}

// An optimizer saved after `saved_at` of those steps and loaded into a fresh one (the state through
// the CPU and JSON, as a checkpoint carries it) continues bit for bit to step `to`. `make(params)`
// builds the optimizer over `params`; `start` holds the parameters' first values.
template <class Make>
void check_exact_resume(const optim::NamedParams& start, Make make, int saved_at, int to) {
  auto params_a = clone_params(start);
  auto a = make(params_a);
  step_with_late_grads(*a, params_a, 0, saved_at);
  const auto saved = through_cpu(a->state());
  auto params_b = clone_params(params_a);
  auto b = make(params_b);
  b->load_state(saved);
  CHECK(same_state(through_cpu(b->state()), saved));
  step_with_late_grads(*a, params_a, saved_at, to);
  step_with_late_grads(*b, params_b, saved_at, to);
  CHECK(same_params(params_a, params_b));
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
