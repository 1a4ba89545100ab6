// Adagrad and RMSprop (lib/optim/adagrad.h, rmsprop.h) step for step against LibTorch's own
// torch::optim::Adagrad and torch::optim::RMSprop (the rule of torch.optim's per-tensor path), with
// two parameter groups (L2 weight decay in one), a changing learning rate and a parameter whose
// gradient starts late; then their states resume bit for bit.
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>
#include "../torch_catch.h"  // first: see the file

#include "helpers.h"
#include "optim/adagrad.h"
#include "optim/rmsprop.h"
#include "util/error.h"

using namespace hftrain;
using namespace hftrain::test;
using Catch::Matchers::Contains;

namespace {

constexpr int kLateFrom = 2;
constexpr double kLr = 0.01;
constexpr double kWeightDecay = 0.05;
const std::set<std::string> kDecay = {"layers.0.attn.qkv_proj.weight", "late.weight"};

optim::NamedParams make_params() {
  const std::vector<std::pair<std::string, std::vector<int64_t>>> shapes = {
      {"layers.0.attn.qkv_proj.weight", {6, 4}}, {"layers.0.attn.qkv_proj.bias", {6}}, {"late.weight", {3, 2}}};
  return cos_params(shapes);
}

double lr_factor(int step) { return 1.0 - 0.1 * step; }

// LibTorch's optimizer over the same two groups as groups_of(): decay first, then the rest.
template <typename Opt, typename Options>
std::unique_ptr<Opt> reference(const optim::NamedParams& params, Options options) {
  std::vector<torch::Tensor> decay, rest;
  for (const auto& [name, p] : params) (kDecay.count(name) ? decay : rest).push_back(p);
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decay, std::make_unique<Options>(Options(options).weight_decay(kWeightDecay)));
  groups.emplace_back(rest, std::make_unique<Options>(Options(options).weight_decay(0.0)));
  return std::make_unique<Opt>(groups, options);
}

template <typename Options>
void set_reference_lr(torch::optim::Optimizer& opt, double lr) {
  for (auto& g : opt.param_groups()) static_cast<Options&>(g.options()).lr(lr);
}

// Runs ours and the reference side by side for `steps` steps and compares every parameter after
// each one: bit for bit, or within `tol` (absolute) where the two orders of operations differ.
template <typename Options>
void follow(optim::Optimizer& ours, optim::NamedParams& ps, torch::optim::Optimizer& ref, optim::NamedParams& rs,
            int steps, double tol) {
  for (int step = 0; step < steps; ++step) {
    INFO("step " << step);
    set_step_grads(ps, step, kLateFrom);
    set_step_grads(rs, step, kLateFrom);
    ours.set_lr_factor(lr_factor(step));
    set_reference_lr<Options>(ref, kLr * lr_factor(step));
    ours.step();
    ref.step();
    for (size_t i = 0; i < ps.size(); ++i) {
      INFO(ps[i].first);
      if (tol == 0) {
        CHECK(torch::equal(ps[i].second, rs[i].second));
      } else {
        CHECK(max_abs_diff(ps[i].second, rs[i].second) <= tol);
      }
    }
  }
}

}  // namespace

TEST_CASE("adagrad follows torch::optim::Adagrad step by step", "[optim][adagrad]") {
  struct Case {
    const char* label;
    optim::AdagradSettings settings;
  };
  for (const Case& c :
       {Case{"defaults", {}}, Case{"lr_decay, initial accumulator, eps",
                                   {.lr_decay = 0.05, .initial_accumulator_value = 0.1, .eps = 1e-6}}}) {
    INFO(c.label);
    auto ps = make_params();
    auto rs = clone_params(ps);
    auto ours = optim::make_adagrad(groups_of(ps, kDecay, kLr, kWeightDecay), c.settings);
    auto ref = reference<torch::optim::Adagrad>(rs, torch::optim::AdagradOptions(kLr)
                                                        .lr_decay(c.settings.lr_decay)
                                                        .initial_accumulator_value(c.settings.initial_accumulator_value)
                                                        .eps(c.settings.eps));
    follow<torch::optim::AdagradOptions>(*ours, ps, *ref, rs, 6, 0.0);
  }
}

TEST_CASE("rmsprop follows torch::optim::RMSprop step by step", "[optim][rmsprop]") {
  struct Case {
    const char* label;
    optim::RmspropSettings settings;
    double tol;
  };
  // Centered: torch.optim (Python) moves grad_avg with lerp_, as ours does; LibTorch's C++ port with
  // mul_ and add_, which rounds differently in the last place.
  for (const Case& c : {Case{"defaults", {}, 0.0}, Case{"momentum", {.alpha = 0.9, .momentum = 0.8}, 0.0},
                        Case{"centered with momentum", {.momentum = 0.5, .centered = true}, 1e-6}}) {
    INFO(c.label);
    auto ps = make_params();
    auto rs = clone_params(ps);
    auto ours = optim::make_rmsprop(groups_of(ps, kDecay, kLr, kWeightDecay), c.settings);
    auto ref = reference<torch::optim::RMSprop>(rs, torch::optim::RMSpropOptions(kLr)
                                                        .alpha(c.settings.alpha)
                                                        .eps(c.settings.eps)
                                                        .momentum(c.settings.momentum)
                                                        .centered(c.settings.centered));
    follow<torch::optim::RMSpropOptions>(*ours, ps, *ref, rs, 6, c.tol);
  }
}

TEST_CASE("adagrad and rmsprop states resume bit for bit and are refused when they do not fit",
          "[optim][adagrad][rmsprop]") {
  using Make = std::function<std::unique_ptr<optim::Optimizer>(const optim::NamedParams&)>;
  const std::vector<std::pair<std::string, Make>> makers = {
      {"adagrad",
       [](const optim::NamedParams& p) {
         return optim::make_adagrad(groups_of(p, kDecay, kLr, kWeightDecay), {.lr_decay = 0.01});
       }},
      {"rmsprop", [](const optim::NamedParams& p) {
         return optim::make_rmsprop(groups_of(p, kDecay, kLr, kWeightDecay), {.momentum = 0.9, .centered = true});
       }}};
  for (const auto& [label, make] : makers) {
    INFO(label);
    auto params_a = make_params();
    auto a = make(params_a);
    for (int step = 0; step < 3; ++step) {
      set_step_grads(params_a, step, kLateFrom + 1);  // late.weight has no state at the save
      a->step();
    }
    const optim::OptimizerState saved = through_cpu(a->state());
    CHECK(saved.meta["optimizer"] == label);
    CHECK(saved.meta["steps"].size() == 2);
    CHECK_FALSE(saved.meta["steps"].contains("late.weight"));
    auto params_b = clone_params(params_a);
    auto b = make(params_b);
    b->load_state(saved);
    CHECK(same_state(b->state(), saved));
    for (int step = 3; step < 6; ++step) {
      set_step_grads(params_a, step, kLateFrom + 1);
      set_step_grads(params_b, step, kLateFrom + 1);
      a->step();
      b->step();
    }
    CHECK(same_params(params_a, params_b));

    // Another optimizer's state, and a state tensor of the wrong shape: refused, nothing changed.
    auto params_c = make_params();
    auto c = make(params_c);
    optim::OptimizerState other = saved;
    other.meta["optimizer"] = label == "adagrad" ? "rmsprop" : "adagrad";
    CHECK_THAT(load_error(*c, other), Contains("adagrad") && Contains("rmsprop"));
    optim::OptimizerState wrong = saved;
    wrong.tensors[0].second = torch::zeros({5});
    CHECK_THAT(load_error(*c, wrong), Contains(wrong.tensors[0].first.substr(0, wrong.tensors[0].first.find('/'))));
    CHECK(c->state().tensors.empty());
  }
}

TEST_CASE("adagrad and rmsprop on a CUDA device follow the CPU", "[optim][adagrad][rmsprop][gpu]") {
  if (!torch::cuda::is_available()) {
    WARN("no CUDA device; skipped");
    return;
  }
  for (const bool rms : {false, true}) {
    INFO((rms ? "rmsprop" : "adagrad"));
    auto cpu = make_params();
    optim::NamedParams gpu;
    for (const auto& [name, p] : cpu) gpu.emplace_back(name, p.detach().to(torch::kCUDA).set_requires_grad(true));
    auto make = [&](const optim::NamedParams& p) {
      return rms ? optim::make_rmsprop(groups_of(p, kDecay, kLr, kWeightDecay), {.momentum = 0.9, .centered = true})
                 : optim::make_adagrad(groups_of(p, kDecay, kLr, kWeightDecay), {.lr_decay = 0.01});
    };
    auto a = make(cpu);
    auto b = make(gpu);
    for (int step = 0; step < 5; ++step) {
      set_step_grads(cpu, step, kLateFrom);
      set_step_grads(gpu, step, kLateFrom);
      a->step();
      b->step();
    }
    for (size_t i = 0; i < cpu.size(); ++i) CHECK(max_abs_diff(gpu[i].second.cpu(), cpu[i].second) <= 1e-5);
    for (const auto& [key, t] : b->state().tensors) CHECK(t.is_cuda());
  }
}
