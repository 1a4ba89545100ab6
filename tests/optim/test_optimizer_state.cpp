// Optimizer state export and import (checkpoint resume): k steps, state(), a fresh optimizer over
// copies of the parameters, load_state(), m more steps on both: bit-identical parameters.
#include <functional>
#include "../torch_catch.h"  // first: see the file

#include "../config/helpers.h"
#include "optim/optimizer.h"
#include "helpers.h"
#include "util/error.h"

using namespace hftrain;
using namespace hftrain::test;
using Catch::Matchers::Contains;

namespace {

struct Case {
  const char* label;
  std::vector<std::string> overrides;
};

// Every optimizer and the settings that change what state it keeps.
const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {"adamw", {"optimizer.name=adamw", "optimizer.lr=0.01", "optimizer.beta2=0.95"}},
      {"sgd momentum", {"optimizer.name=sgd", "optimizer.lr=0.05", "optimizer.momentum=0.9"}},
      {"sgd nesterov",
       {"optimizer.name=sgd", "optimizer.lr=0.05", "optimizer.momentum=0.9",
        "optimizer.nesterov=true"}},
      {"sgd plain", {"optimizer.name=sgd", "optimizer.lr=0.05"}},
      {"adafactor", {"optimizer.name=adafactor", "optimizer.lr=0.01"}},
      {"adafactor beta1 scaled",
       {"optimizer.name=adafactor", "optimizer.lr=0.01", "optimizer.adafactor.beta1=0.9",
        "optimizer.adafactor.scale_parameter=true"}},
      {"lion", {"optimizer.name=lion", "optimizer.lr=0.001"}},
      {"adagrad", {"optimizer.name=adagrad", "optimizer.lr=0.01", "optimizer.adagrad.lr_decay=0.01"}},
      {"rmsprop centered", {"optimizer.name=rmsprop", "optimizer.lr=0.001", "optimizer.momentum=0.9",
                            "optimizer.rmsprop.centered=true"}},
  };
  return c;
}

config::OptimizerConfig config_of(std::vector<std::string> overrides) {
  overrides.push_back(
      "optimizer.weight_decay=0.1");  // two groups: decay and no-decay (biases, norms)
  return test::resolve(test::kMinimal, overrides).values.optimizer;
}

// Names as in the models; a 3-d parameter for Adafactor's batched factoring; "late" gets no
// gradient before step kLateFrom, so it has no state at the save.
constexpr int kLateFrom = 4;
optim::NamedParams make_params() {
  const std::vector<std::pair<std::string, std::vector<int64_t>>> shapes = {
      {"layers.0.attn.qkv_proj.weight", {6, 4}},
      {"layers.0.attn.qkv_proj.bias", {6}},
      {"layers.0.mlp.experts", {2, 3, 4}},
      {"final_norm.weight", {4}},
      {"late.weight", {3, 2}}};
  optim::NamedParams params;
  int64_t seed = 1;
  for (const auto& [name, shape] : shapes) {
    int64_t n = 1;
    for (auto d : shape) n *= d;
    auto t = torch::cos(torch::arange(n, torch::kFloat64) * 0.7 + static_cast<double>(seed++))
                 .to(torch::kFloat32);
    params.emplace_back(name, t.reshape(shape).set_requires_grad(true));
  }
  return params;
}

void set_grads(optim::NamedParams& params, int step) { test::set_step_grads(params, step, kLateFrom); }

void run_steps(optim::Optimizer& opt, optim::NamedParams& params, int from, int to) {
  for (int step = from; step < to; ++step) {
    opt.set_lr_factor(1.0 - 0.1 * step);  // as a schedule would
    set_grads(params, step);
    opt.step();
  }
}

}  // namespace

TEST_CASE("every optimizer resumes bit-identically from its state", "[optim][state]") {
  constexpr int k = 3, m = 3;
  for (const auto& c : cases()) {
    for (const bool via_cpu : {false, true}) {
      INFO(c.label << (via_cpu ? ", state through CPU tensors and JSON text"
                               : ", state handed over directly"));
      const auto cfg = config_of(c.overrides);
      auto params_a = make_params();
      auto a = optim::make_optimizer(cfg, params_a);
      REQUIRE(a->groups().size() == 2);
      run_steps(*a, params_a, 0, k);

      optim::OptimizerState saved = a->state();
      CHECK(saved.meta["optimizer"] ==
            std::string(c.label).substr(0, std::string(c.label).find(' ')));
      for (const auto& [key, t] : saved.tensors)
        CHECK(key.rfind("late.weight/", 0) == std::string::npos);
      if (via_cpu) saved = through_cpu(saved);

      auto params_b = clone_params(params_a);
      auto b = optim::make_optimizer(cfg, params_b);
      b->load_state(saved);
      // The group lrs in meta differ until the next set_lr_factor: they come from the schedule.
      CHECK(same_tensors(through_cpu(b->state()), through_cpu(a->state())));
      CHECK(b->state().meta.value("steps", nlohmann::json()) ==
            a->state().meta.value("steps", nlohmann::json()));

      run_steps(*a, params_a, k, k + m);
      run_steps(*b, params_b, k, k + m);
      CHECK(same_params(params_a, params_b));
      CHECK(same_state(through_cpu(b->state()), through_cpu(a->state())));
    }
  }
}

TEST_CASE("state names tensors <param>/<key> and records steps and settings", "[optim][state]") {
  auto params = make_params();
  auto opt =
      optim::make_optimizer(config_of({"optimizer.name=adamw", "optimizer.lr=0.01"}), params);
  run_steps(*opt, params, 0, 2);
  const auto s = opt->state();
  std::vector<std::string> keys;
  for (const auto& [key, t] : s.tensors) keys.push_back(key);
  // Group order (decay first: the first parameter decays), then parameter order, then state key.
  CHECK(keys == std::vector<std::string>{
                    "layers.0.attn.qkv_proj.weight/exp_avg",
                    "layers.0.attn.qkv_proj.weight/exp_avg_sq", "layers.0.mlp.experts/exp_avg",
                    "layers.0.mlp.experts/exp_avg_sq", "layers.0.attn.qkv_proj.bias/exp_avg",
                    "layers.0.attn.qkv_proj.bias/exp_avg_sq", "final_norm.weight/exp_avg",
                    "final_norm.weight/exp_avg_sq"});
  CHECK(s.meta["optimizer"] == "adamw");
  CHECK(s.meta["format"] == 1);
  CHECK(s.meta["steps"] == nlohmann::json({{"layers.0.attn.qkv_proj.weight", 2},
                                           {"layers.0.attn.qkv_proj.bias", 2},
                                           {"layers.0.mlp.experts", 2},
                                           {"final_norm.weight", 2}}));
  CHECK(s.meta["groups"].size() == 2);
  CHECK(s.meta["groups"][0]["weight_decay"] == 0.1);
  CHECK(s.meta["groups"][1]["params"] ==
        nlohmann::json({"layers.0.attn.qkv_proj.bias", "final_norm.weight"}));
  CHECK(s.meta["hyperparameters"]["betas"][0] == 0.9);

  auto af =
      optim::make_optimizer(config_of({"optimizer.name=adafactor", "optimizer.lr=0.01"}), params);
  run_steps(*af, params, 0, 1);
  keys.clear();
  for (const auto& [key, t] : af->state().tensors)
    keys.push_back(key + " " + std::to_string(t.dim()));
  CHECK(keys == std::vector<std::string>{"layers.0.attn.qkv_proj.weight/exp_avg_sq_row 1",
                                         "layers.0.attn.qkv_proj.weight/exp_avg_sq_col 1",
                                         "layers.0.mlp.experts/exp_avg_sq_row 2",
                                         "layers.0.mlp.experts/exp_avg_sq_col 2",
                                         "layers.0.attn.qkv_proj.bias/exp_avg_sq 1",
                                         "final_norm.weight/exp_avg_sq 1"});
}

TEST_CASE("state() tensors alias the live state, load_state copies", "[optim][state]") {
  for (const auto& c : cases()) {
    if (std::string(c.label) == "sgd plain") continue;  // keeps no state
    INFO(c.label);
    auto params = make_params();
    auto opt = optim::make_optimizer(config_of(c.overrides), params);
    run_steps(*opt, params, 0, 2);
    const auto live = opt->state();
    REQUIRE(!live.tensors.empty());
    const auto snapshot = through_cpu(live);
    const auto again = opt->state();
    for (size_t i = 0; i < live.tensors.size(); ++i)
      CHECK(live.tensors[i].second.is_same(again.tensors[i].second));
    run_steps(*opt, params, 2, 3);
    CHECK_FALSE(same_state(through_cpu(live), snapshot));  // documented: the next step changes them

    // Loading never aliases its input: stepping the loaded optimizer leaves the input alone.
    auto params_b = clone_params(params);
    auto b = optim::make_optimizer(config_of(c.overrides), params_b);
    const auto input = through_cpu(opt->state());
    const auto input_copy = through_cpu(input);
    b->load_state(input);
    run_steps(*b, params_b, 3, 4);
    CHECK(same_state(input, input_copy));
  }
}

TEST_CASE("loading replaces state, absent parameters become stateless", "[optim][state]") {
  for (const auto& c : cases()) {
    INFO(c.label);
    const auto cfg = config_of(c.overrides);
    // Reference: a fresh optimizer, 2 steps. Other: 5 steps (all parameters stateful), then the
    // reference's early state loaded, which must drop "late.weight"'s state.
    auto params_ref = make_params();
    auto ref = optim::make_optimizer(cfg, params_ref);
    run_steps(*ref, params_ref, 0, 2);
    auto params_other = clone_params(params_ref);
    auto other = optim::make_optimizer(cfg, params_other);
    run_steps(*other, params_other, 0, 5);
    for (size_t i = 0; i < params_ref.size(); ++i)
      params_other[i].second.detach().copy_(params_ref[i].second.detach());
    other->load_state(ref->state());
    run_steps(*ref, params_ref, 2, 6);
    run_steps(*other, params_other, 2, 6);
    CHECK(same_params(params_ref, params_other));
  }
}

TEST_CASE("loading into an optimizer that has never stepped, and an empty state",
          "[optim][state]") {
  for (const auto& c : cases()) {
    INFO(c.label);
    const auto cfg = config_of(c.overrides);
    auto params_a = make_params();
    auto a = optim::make_optimizer(cfg, params_a);
    auto params_b = clone_params(params_a);
    auto b = optim::make_optimizer(cfg, params_b);
    const auto empty = a->state();  // never stepped: no tensors
    CHECK(empty.tensors.empty());
    b->load_state(empty);
    run_steps(*a, params_a, 0, 5);
    run_steps(*b, params_b, 0, 5);
    CHECK(same_params(params_a, params_b));
  }
}

TEST_CASE("state of another optimizer is refused, naming both", "[optim][state]") {
  auto params = make_params();
  auto adamw =
      optim::make_optimizer(config_of({"optimizer.name=adamw", "optimizer.lr=0.01"}), params);
  run_steps(*adamw, params, 0, 2);
  auto lion =
      optim::make_optimizer(config_of({"optimizer.name=lion", "optimizer.lr=0.001"}), params);
  const auto msg = load_error(*lion, adamw->state());
  CHECK_THAT(msg, Contains("'adamw'") && Contains("'lion'"));
  auto sgd = optim::make_optimizer(config_of({"optimizer.name=sgd", "optimizer.lr=0.01"}), params);
  CHECK_THAT(load_error(*sgd, lion->state()), Contains("'lion'") && Contains("'sgd'"));
}

TEST_CASE("a bad state throws naming what is wrong and leaves the optimizer unchanged",
          "[optim][state]") {
  using Edit = std::function<void(optim::OptimizerState&)>;
  auto tensor_index = [](const optim::OptimizerState& s, const std::string& key) {
    for (size_t i = 0; i < s.tensors.size(); ++i) {
      if (s.tensors[i].first == key) return i;
    }
    FAIL("no tensor " << key);
    return size_t{0};
  };
  const std::string w = "layers.0.attn.qkv_proj.weight";
  for (const auto& c : cases()) {
    const std::string label = c.label;
    const bool counts_steps = label.rfind("adamw", 0) == 0 || label.rfind("adafactor", 0) == 0 ||
                              label.rfind("adagrad", 0) == 0 || label.rfind("rmsprop", 0) == 0;
    const std::string w_key = w + (label.rfind("sgd", 0) == 0       ? "/momentum_buffer"
                                   : label == "adafactor"           ? "/exp_avg_sq_row"
                                   : label == "adagrad"             ? "/sum"
                                   : label.rfind("rmsprop", 0) == 0 ? "/square_avg"
                                                                    : "/exp_avg");
    std::vector<std::tuple<std::string, Edit, std::string>> edits = {
        {"a parameter missing from the saved groups",
         [&](optim::OptimizerState& s) {
           auto& names = s.meta["groups"][0]["params"];
           REQUIRE(names[0] == w);
           names.erase(0);
         },
         "'" + w + "' of this run is missing"},
        {"an unexpected parameter in the saved groups",
         [](optim::OptimizerState& s) {
           s.meta["groups"][0]["params"].push_back("encoder.weight");
         },
         "unexpected parameter 'encoder.weight'"},
        {"a tensor of an unknown parameter",
         [](optim::OptimizerState& s) {
           s.tensors.emplace_back("encoder.weight/exp_avg", torch::zeros({2}));
         },
         "unexpected parameter 'encoder.weight'"},
        {"a malformed meta field", [](optim::OptimizerState& s) { s.meta["format"] = "one"; },
         "\"format\""},
        {"no meta", [](optim::OptimizerState& s) { s.meta = nullptr; },
         "meta is not a JSON object"},
        {"a malformed tensor name",
         [](optim::OptimizerState& s) { s.tensors.emplace_back("exp_avg", torch::zeros({2})); },
         "'exp_avg' is not named <parameter>/<state key>"},
    };
    if (label != "sgd plain") {
      edits.push_back({"a state tensor of the wrong shape",
                       [&](optim::OptimizerState& s) {
                         auto& t = s.tensors[tensor_index(s, w_key)].second;
                         t = torch::zeros({t.numel() + 1});
                       },
                       "'" + w_key + "' has shape"});
      edits.push_back({"a state tensor missing",
                       [&](optim::OptimizerState& s) {
                         s.tensors.erase(s.tensors.begin() + tensor_index(s, w_key));
                       },
                       "parameter '" + w + "' has state but no tensor '" + w_key + "'"});
      edits.push_back({"a state tensor of another dtype (converting it would hide a damaged state)",
                       [&](optim::OptimizerState& s) {
                         auto& t = s.tensors[tensor_index(s, w_key)].second;
                         t = t.to(torch::kFloat64);
                       },
                       "'" + w_key + "' holds Double, expected Float, the dtype"});
      edits.push_back({"an integer state tensor",
                       [&](optim::OptimizerState& s) {
                         auto& t = s.tensors[tensor_index(s, w_key)].second;
                         t = t.to(torch::kInt64);
                       },
                       "'" + w_key + "' holds Long, expected Float"});
      edits.push_back({"an unexpected state tensor",
                       [&](optim::OptimizerState& s) {
                         s.tensors.emplace_back(w + "/bogus", torch::zeros({6, 4}));
                       },
                       "unexpected state tensor '" + w + "/bogus'"});
    }
    if (counts_steps) {
      edits.push_back({"a malformed step count",
                       [&](optim::OptimizerState& s) { s.meta["steps"][w] = "three"; },
                       "\"steps\" of parameter '" + w + "'"});
      edits.push_back({"state tensors without a step count",
                       [&](optim::OptimizerState& s) { s.meta["steps"].erase(w); },
                       "'" + w + "' has state tensors but no step count"});
    }
    for (const auto& [what, edit, expected] : edits) {
      // Without step counts (sgd, lion) a parameter without tensors simply has no state.
      if (!counts_steps && what == "a state tensor missing") continue;
      INFO(label << ": " << what);
      const auto cfg = config_of(c.overrides);
      auto params = make_params();
      auto opt = optim::make_optimizer(cfg, params);
      run_steps(*opt, params, 0, 3);
      auto params_ref = clone_params(params);
      auto ref = optim::make_optimizer(cfg, params_ref);
      ref->load_state(opt->state());
      const auto before = through_cpu(opt->state());

      auto bad = through_cpu(opt->state());
      edit(bad);
      CHECK_THAT(load_error(*opt, bad), Contains(expected));
      CHECK(same_state(through_cpu(opt->state()), before));
      run_steps(*opt, params, 3, 5);  // still usable, and on its old trajectory
      run_steps(*ref, params_ref, 3, 5);
      CHECK(same_params(params, params_ref));
    }
  }
}

TEST_CASE("state changes that settings rule out are refused", "[optim][state]") {
  auto params = make_params();
  auto with_beta1 = optim::make_optimizer(
      config_of({"optimizer.name=adafactor", "optimizer.lr=0.01", "optimizer.adafactor.beta1=0.9"}),
      params);
  run_steps(*with_beta1, params, 0, 2);
  auto without =
      optim::make_optimizer(config_of({"optimizer.name=adafactor", "optimizer.lr=0.01"}), params);
  CHECK_THAT(load_error(*without, with_beta1->state()),
             Contains("unexpected state tensor") && Contains("/exp_avg'"));
  run_steps(*without, params, 0, 2);
  CHECK_THAT(load_error(*with_beta1, without->state()),
             Contains("no tensor") && Contains("/exp_avg'"));

  auto momentum = optim::make_optimizer(
      config_of({"optimizer.name=sgd", "optimizer.lr=0.01", "optimizer.momentum=0.9"}), params);
  run_steps(*momentum, params, 0, 2);
  auto plain =
      optim::make_optimizer(config_of({"optimizer.name=sgd", "optimizer.lr=0.01"}), params);
  CHECK_THAT(load_error(*plain, momentum->state()), Contains("momentum_buffer"));
}

TEST_CASE("low-precision parameters: state dtypes follow the optimizer and survive a round trip",
          "[optim][state]") {
  for (const auto& c : cases()) {
    INFO(c.label);
    const auto cfg = config_of(c.overrides);
    auto params_a = make_params();
    for (auto& [name, p] : params_a) p = p.detach().to(torch::kBFloat16).set_requires_grad(true);
    auto a = optim::make_optimizer(cfg, params_a);
    run_steps(*a, params_a, 0, 3);
    const auto saved = a->state();
    const bool adafactor = std::string(c.label).rfind("adafactor", 0) == 0;
    for (const auto& [key, t] : saved.tensors) {
      INFO(key);
      CHECK(t.scalar_type() ==
            (adafactor ? torch::kFloat32 : torch::kBFloat16));  // Adafactor keeps fp32
    }
    auto params_b = clone_params(params_a);
    auto b = optim::make_optimizer(cfg, params_b);
    b->load_state(through_cpu(saved));
    run_steps(*a, params_a, 3, 6);
    run_steps(*b, params_b, 3, 6);
    CHECK(same_params(params_a, params_b));
  }
}

TEST_CASE("state on a CUDA device resumes bit-identically through the CPU", "[optim][state][gpu]") {
  if (!torch::cuda::is_available()) {
    WARN("no CUDA device; skipped");
    return;
  }
  for (const auto& c : cases()) {
    INFO(c.label);
    const auto cfg = config_of(c.overrides);
    auto params_a = make_params();
    for (auto& [name, p] : params_a) p = p.detach().to(torch::kCUDA).set_requires_grad(true);
    auto a = optim::make_optimizer(cfg, params_a);
    run_steps(*a, params_a, 0, 3);
    const auto saved = a->state();
    for (const auto& [key, t] : saved.tensors) CHECK(t.is_cuda());
    auto params_b = clone_params(params_a);
    auto b = optim::make_optimizer(cfg, params_b);
    b->load_state(through_cpu(saved));
    for (const auto& [key, t] : b->state().tensors) CHECK(t.is_cuda());
    run_steps(*a, params_a, 3, 6);
    run_steps(*b, params_b, 3, 6);
    CHECK(same_params(params_a, params_b));
  }
}
