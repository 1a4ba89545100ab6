// Schedule-Free AdamW (lib/optim/schedule_free_adamw.h) replays the schedulefree package's
// AdamWScheduleFree (tests/fixtures/schedule_free.safetensors, from
// tests/conformance/gen_schedule_free_fixtures.py) in train and eval mode, and resumes from its
// state.
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include "../torch_catch.h"  // first: see the file

#include <nlohmann/json.hpp>

#include "model/weights/safetensors.h"
#include "optim/schedule_free_adamw.h"
#include "helpers.h"
#include "util/error.h"

using namespace hftrain;
using namespace hftrain::test;
using Catch::Matchers::Contains;
using Json = nlohmann::json;

namespace {

// ---- a small model for the state tests ----------------------------------------------------------

constexpr int kLateFrom = 3;
// Against the fixture on CPU kernels of another vector width (see same_cpu_kernels): the scalar
// kernels (ATEN_CPU_CAPABILITY=default) pass within it against the AVX2 fixture.
constexpr double kOtherKernels = 1e-6;
const std::set<std::string> kDecay = {"layers.0.attn.qkv_proj.weight", "late.weight",
                                      "embed.weight"};

optim::NamedParams make_params() {
  const std::vector<std::pair<std::string, std::vector<int64_t>>> shapes = {
      {"layers.0.attn.qkv_proj.weight", {6, 4}},
      {"layers.0.attn.qkv_proj.bias", {6}},
      {"final_norm.weight", {4}},
      {"late.weight", {3, 2}},
      {"never.weight", {2}}};
  optim::NamedParams params = cos_params(shapes);
  auto bf = torch::sin(torch::arange(12, torch::kFloat64)).to(torch::kBFloat16).reshape({3, 4});
  params.emplace_back("embed.weight", bf.set_requires_grad(true));
  return params;
}

void set_grads(optim::NamedParams& params, int step) { test::set_step_grads(params, step, kLateFrom); }

void run_steps(optim::Optimizer& opt, optim::NamedParams& params, int from, int to) {
  for (int step = from; step < to; ++step) {
    set_grads(params, step);
    opt.step();
  }
}

const optim::ScheduleFreeSettings kSettings{.warmup_steps = 2, .r = 0.5};

std::unique_ptr<optim::ScheduleFreeAdamW> make_sf(
    const optim::NamedParams& params, const optim::ScheduleFreeSettings& s = kSettings) {
  return optim::make_schedule_free_adamw(groups_of(params, kDecay, 0.01, 0.1), s);
}

}  // namespace

TEST_CASE("schedule-free AdamW follows the schedulefree package step by step",
          "[optim][schedule_free]") {
  std::map<std::string, std::string> metadata;
  const auto list = model::read_safetensors(
      std::string(HFTRAIN_TEST_FIXTURES_DIR) + "/schedule_free.safetensors", &metadata);
  const std::map<std::string, torch::Tensor> f(list.begin(), list.end());
  const Json fixture = Json::parse(metadata.at("fixture"));
  const Json& cases = fixture.at("cases");
  const int steps = fixture.at("steps").get<int>();
  const bool exact = same_cpu_kernels(fixture);
  // Compares bit for bit on the fixture's CPU kernels, else within kOtherKernels.
  auto same = [&](const torch::Tensor& a, const torch::Tensor& b) {
    return exact ? torch::equal(a, b) : max_abs_diff(a, b) <= kOtherKernels;
  };
  const auto decay_names = fixture.at("decay").get<std::set<std::string>>();
  REQUIRE(cases.size() == 2);

  for (const auto& [case_name, c] : cases.items()) {
    // Parameters by name (nlohmann::json sorts keys): the order in a group changes no arithmetic.
    optim::NamedParams params;
    for (const auto& [name, shape] : c["shapes"].items()) {
      params.emplace_back(name, f.at(case_name + "/init/" + name).clone().set_requires_grad(true));
    }
    const double lr = c["lr"].get<double>();
    const optim::ScheduleFreeSettings settings{
        .beta1 = c["betas"][0].get<double>(),
        .beta2 = c["betas"][1].get<double>(),
        .eps = c["eps"].get<double>(),
        .warmup_steps = c["warmup_steps"].get<int64_t>(),
        .r = c["r"].get<double>(),
        .weight_lr_power = c["weight_lr_power"].get<double>()};
    auto opt = optim::make_schedule_free_adamw(
        groups_of(params, decay_names, lr, c["weight_decay"].get<double>()), settings);
    REQUIRE(opt->in_train_mode());
    int checked_x = 0;
    for (int step = 0; step < steps; ++step) {
      opt->set_lr_factor(c["lr_factors"][static_cast<size_t>(step)].get<double>());
      for (auto& [name, p] : params) {
        auto it = f.find(case_name + "/grad/" + std::to_string(step) + "/" + name);
        p.mutable_grad() = it == f.end() ? torch::Tensor() : it->second.clone();
      }
      opt->step();
      const std::string after = std::to_string(step + 1);
      for (const auto& [name, p] : params) {
        INFO(case_name << ", step " << after << ", " << name << " (y, train mode)");
        CHECK(same(p, f.at(case_name + "/y/" + after + "/" + name)));
      }
      if (c["switch_every_step"].get<bool>() || step == steps - 1) {
        opt->eval_mode();
        for (const auto& [name, p] : params) {
          INFO(case_name << ", step " << after << ", " << name << " (x, eval mode)");
          CHECK(same(p, f.at(case_name + "/x/" + after + "/" + name)));
        }
        ++checked_x;
        opt->train_mode();
      }
    }
    CHECK(checked_x == (c["switch_every_step"].get<bool>() ? steps : 1));
  }
}

TEST_CASE("schedule-free AdamW switches between y and x", "[optim][schedule_free]") {
  auto params = make_params();
  const auto initial = clone_params(params);
  auto opt = make_sf(params);
  CHECK(opt->in_train_mode());
  // No state yet: both modes hold the same values.
  opt->eval_mode();
  CHECK_FALSE(opt->in_train_mode());
  CHECK(same_params(params, initial));
  CHECK_THROWS_AS(opt->step(), std::logic_error);
  opt->train_mode();
  run_steps(*opt, params, 0, 4);
  const auto y = clone_params(params);

  opt->eval_mode();
  opt->eval_mode();  // a no-op in eval mode
  const auto x = clone_params(params);
  CHECK_FALSE(same_params(x, y));
  // x = (y - (1 - beta1) z) / beta1, z from the state.
  const auto s = opt->state();
  CHECK(s.meta["train_mode"] == false);
  for (size_t i = 0; i < params.size(); ++i) {
    const auto& [name, p] = params[i];
    INFO(name);
    torch::Tensor z;
    for (const auto& [key, t] : s.tensors) {
      if (key == name + "/z") z = t;
    }
    if (!z.defined()) {  // never had a gradient: no state, the same in both modes
      CHECK(name == "never.weight");
      CHECK(torch::equal(p, y[i].second));
      continue;
    }
    const auto expect = (y[i].second.to(torch::kFloat64) - 0.1 * z.to(torch::kFloat64)) / 0.9;
    CHECK(max_abs_diff(p, expect) <= (p.scalar_type() == torch::kBFloat16 ? 2e-2 : 1e-6));
  }
  opt->train_mode();
  opt->train_mode();
  for (size_t i = 0; i < params.size(); ++i) {
    INFO(params[i].first);
    CHECK(max_abs_diff(params[i].second, y[i].second) <=
          (params[i].second.scalar_type() == torch::kBFloat16 ? 2e-2 : 1e-6));
  }
}

TEST_CASE("schedule-free AdamW state keys and meta", "[optim][schedule_free][state]") {
  auto params = make_params();
  auto opt = make_sf(params);
  run_steps(*opt, params, 0, 2);
  const auto s = opt->state();
  std::vector<std::string> keys;
  for (const auto& [key, t] : s.tensors) keys.push_back(key);
  CHECK(keys == std::vector<std::string>{
                    "layers.0.attn.qkv_proj.weight/z", "layers.0.attn.qkv_proj.weight/exp_avg_sq",
                    "embed.weight/z", "embed.weight/exp_avg_sq", "layers.0.attn.qkv_proj.bias/z",
                    "layers.0.attn.qkv_proj.bias/exp_avg_sq", "final_norm.weight/z",
                    "final_norm.weight/exp_avg_sq"});
  CHECK(s.tensors[2].second.scalar_type() == torch::kBFloat16);  // the parameter's dtype
  CHECK(s.meta["optimizer"] == "schedule_free_adamw");
  CHECK(s.meta["format"] == 1);
  CHECK_FALSE(s.meta.contains("steps"));
  CHECK(s.meta["train_mode"] == true);
  REQUIRE(s.meta["schedule_free"].size() == 2);
  CHECK(s.meta["schedule_free"][0]["k"] == 2);
  CHECK(s.meta["schedule_free"][0]["lr_max"] == 0.01);  // warmup: 0.005, then 0.01
  CHECK(s.meta["schedule_free"][0]["weight_sum"].get<double>() ==
        Approx(0.005 * 0.005 + std::sqrt(2.0) * 0.01 * 0.01));
  CHECK(s.meta["hyperparameters"] == Json({{"betas", {0.9, 0.999}},
                                           {"eps", 1e-8},
                                           {"warmup_steps", 2},
                                           {"r", 0.5},
                                           {"weight_lr_power", 2.0}}));
  CHECK(s.tensors[0].second.is_same(opt->state().tensors[0].second));  // live tensors
}

TEST_CASE("schedule-free AdamW resumes bit-identically from its state",
          "[optim][schedule_free][state]") {
  for (const bool save_in_eval : {true, false}) {
    for (const bool via_cpu : {false, true}) {
      INFO((save_in_eval ? "saved in eval mode" : "saved in train mode")
           << (via_cpu ? ", state through CPU tensors and JSON text" : ""));
      auto params_a = make_params();
      auto a = make_sf(params_a);
      run_steps(*a, params_a, 0, 4);
      if (save_in_eval) a->eval_mode();  // as a checkpoint save should: the weights saved are x
      auto saved = a->state();
      CHECK(saved.meta["train_mode"] == !save_in_eval);
      if (via_cpu) saved = through_cpu(saved);
      const auto input_copy = through_cpu(saved);

      auto params_b = clone_params(params_a);  // the checkpoint's weights
      auto b = make_sf(params_b);
      b->load_state(saved);
      CHECK(b->in_train_mode() == !save_in_eval);
      CHECK(same_state(through_cpu(b->state()), through_cpu(a->state())));
      a->train_mode();
      b->train_mode();
      run_steps(*a, params_a, 4, 8);
      run_steps(*b, params_b, 4, 8);
      CHECK(same_params(params_a, params_b));
      CHECK(same_state(through_cpu(b->state()), through_cpu(a->state())));
      if (via_cpu) CHECK(same_state(saved, input_copy));  // copied, never aliased
    }
  }
  // Groups regrouped on resume (another no-decay glob): fine while the groups' counts agree.
  auto params_a = make_params();
  auto a = make_sf(params_a);
  run_steps(*a, params_a, 0, 3);
  auto params_b = clone_params(params_a);
  auto b = optim::make_schedule_free_adamw(
      groups_of(params_b, {"layers.0.attn.qkv_proj.weight", "layers.0.attn.qkv_proj.bias"}, 0.01,
                0.1),
      kSettings);
  b->load_state(a->state());
  CHECK(b->state().meta["schedule_free"] == a->state().meta["schedule_free"]);
  // An empty state (never stepped) loads as a fresh optimizer.
  auto params_c = make_params(), params_d = make_params();
  auto c = make_sf(params_c), d = make_sf(params_d);
  d->load_state(c->state());
  run_steps(*c, params_c, 0, 3);
  run_steps(*d, params_d, 0, 3);
  CHECK(same_params(params_c, params_d));
}

TEST_CASE("schedule-free AdamW refuses a bad state and stays unchanged",
          "[optim][schedule_free][state]") {
  using Edit = std::function<void(optim::OptimizerState&)>;
  const std::string w = "layers.0.attn.qkv_proj.weight";
  auto index_of = [](const optim::OptimizerState& s, const std::string& key) {
    for (size_t i = 0; i < s.tensors.size(); ++i) {
      if (s.tensors[i].first == key) return i;
    }
    FAIL("no tensor " << key);
    return size_t{0};
  };
  const std::vector<std::tuple<std::string, Edit, std::string>> edits = {
      {"another optimizer's state", [](optim::OptimizerState& s) { s.meta["optimizer"] = "adamw"; },
       "saved by optimizer 'adamw', but this run's optimizer is 'schedule_free_adamw'"},
      {"z of the wrong shape",
       [&](optim::OptimizerState& s) {
         s.tensors[index_of(s, w + "/z")].second = torch::zeros({24});
       },
       "'" + w + "/z' has shape [24], expected [6, 4]"},
      {"exp_avg_sq missing",
       [&](optim::OptimizerState& s) {
         s.tensors.erase(s.tensors.begin() + index_of(s, w + "/exp_avg_sq"));
       },
       "parameter '" + w + "' has state but no tensor '" + w + "/exp_avg_sq'"},
      {"an unexpected state tensor",
       [&](optim::OptimizerState& s) {
         s.tensors.emplace_back(w + "/exp_avg", torch::zeros({6, 4}));
       },
       "unexpected state tensor '" + w + "/exp_avg'"},
      {"no train_mode", [](optim::OptimizerState& s) { s.meta.erase("train_mode"); },
       "meta \"train_mode\" is missing or not a boolean"},
      {"schedule_free not one per group",
       [](optim::OptimizerState& s) { s.meta["schedule_free"].erase(1); },
       "meta \"schedule_free\" is missing or not an array with one entry per saved group"},
      {"a malformed step count",
       [](optim::OptimizerState& s) { s.meta["schedule_free"][0]["k"] = -1; },
       "\"k\" (an integer >= 0)"},
      {"a parameter missing from the saved groups",
       [&](optim::OptimizerState& s) { s.meta["groups"][0]["params"].erase(0); },
       "'" + w + "' of this run is missing"},
      {"groups merged across different counts",
       [](optim::OptimizerState& s) { s.meta["schedule_free"][1]["k"] = 7; },
       "come from saved groups with different schedule-free step counts"},
  };
  for (const auto& [what, edit, expected] : edits) {
    INFO(what);
    auto params = make_params();
    auto opt = make_sf(params);
    run_steps(*opt, params, 0, 3);
    auto params_ref = clone_params(params);
    auto ref = make_sf(params_ref);
    ref->load_state(opt->state());
    const auto before = through_cpu(opt->state());
    auto bad = through_cpu(opt->state());
    edit(bad);
    if (what == "groups merged across different counts") {
      // Only a run that puts parameters of both saved groups into one group cannot take it.
      auto params_one = clone_params(params);
      std::vector<optim::ParamGroup> one(1);
      one[0].base_lr = one[0].lr = 0.01;
      for (const auto& [name, p] : params_one) {
        one[0].names.push_back(name);
        one[0].params.push_back(p);
      }
      auto merged = optim::make_schedule_free_adamw(std::move(one), kSettings);
      CHECK_THAT(load_error(*merged, bad), Contains(expected));
      opt->load_state(bad);  // two groups, as saved: fine
      opt->load_state(before);
    } else {
      CHECK_THAT(load_error(*opt, bad), Contains(expected));
    }
    CHECK(same_state(through_cpu(opt->state()), before));
    run_steps(*opt, params, 3, 5);  // still usable, and on its old trajectory
    run_steps(*ref, params_ref, 3, 5);
    CHECK(same_params(params, params_ref));
  }
}

TEST_CASE("schedule-free AdamW on a CUDA device resumes through the CPU",
          "[optim][schedule_free][gpu]") {
  if (!torch::cuda::is_available()) {
    WARN("no CUDA device; skipped");
    return;
  }
  auto params_a = make_params();
  for (auto& [name, p] : params_a) p = p.detach().to(torch::kCUDA).set_requires_grad(true);
  auto a = make_sf(params_a);
  run_steps(*a, params_a, 0, 3);
  a->eval_mode();
  const auto saved = a->state();
  for (const auto& [key, t] : saved.tensors) CHECK(t.is_cuda());
  auto params_b = clone_params(params_a);
  auto b = make_sf(params_b);
  b->load_state(through_cpu(saved));
  for (const auto& [key, t] : b->state().tensors) CHECK(t.is_cuda());
  a->train_mode();
  b->train_mode();
  run_steps(*a, params_a, 3, 6);
  run_steps(*b, params_b, 3, 6);
  CHECK(same_params(params_a, params_b));
}
