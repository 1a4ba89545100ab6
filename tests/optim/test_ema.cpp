// EMA weights (lib/optim/ema.h) replay diffusers' EMAModel over torch.optim.AdamW
// (tests/fixtures/ema.safetensors, from tests/conformance/gen_ema_fixtures.py) for each warm-up;
// swap the average in and out exactly; resume bit for bit (the average in the optimizer state);
// leave the average alone on a step dropped on the device; and refuse saved averages that do not fit.
#include <map>
#include <string>
#include "../torch_catch.h"  // first: see the file

#include <nlohmann/json.hpp>

#include "../config/helpers.h"
#include "helpers.h"
#include "model/weights/safetensors.h"
#include "optim/ema.h"
#include "optim/fused_adamw.h"

using namespace hftrain;
using namespace hftrain::test;
using Catch::Matchers::Contains;
using Json = nlohmann::json;
using Use = optim::Optimizer::Use;

namespace {

config::EmaConfig ema_of(const Json& c) {
  config::EmaConfig e;
  e.enabled = true;
  e.decay = c["decay"].get<double>();
  e.min_decay = c["min_decay"].get<double>();
  e.start_step = c["update_after_step"].get<int64_t>();
  e.every = c["every"].get<int64_t>();
  e.inv_gamma = c["inv_gamma"].get<double>();
  e.power = c["power"].get<double>();
  const std::string w = c["warmup"].get<std::string>();
  e.warmup = w == "inverse" ? config::EmaWarmup::kInverse
                            : (w == "power" ? config::EmaWarmup::kPower : config::EmaWarmup::kNone);
  return e;
}

config::EmaConfig default_ema() {
  config::EmaConfig e;
  e.enabled = true;
  e.decay = 0.9;
  e.every = 1;
  e.inv_gamma = 1.0;
  e.power = 2.0 / 3.0;
  return e;
}

optim::NamedParams make_params() {
  return cos_params({{"w", {6, 5}}, {"b", {5}}, {"late.weight", {3, 4}}, {"never.weight", {2, 2}}});
}

std::unique_ptr<optim::Optimizer> make(const optim::NamedParams& params, const config::EmaConfig& ema) {
  return optim::with_ema(optim::make_fused_adamw(groups_of(params, {"w"}, 0.05, 0.1), {}), ema);
}

const optim::EmaWeights& ema_of(const optim::Optimizer& opt) { return dynamic_cast<const optim::EmaWeights&>(opt); }

}  // namespace

TEST_CASE("EMA weights follow diffusers' EMAModel over AdamW step by step, each warm-up", "[optim][ema]") {
  std::map<std::string, std::string> metadata;
  const auto list = model::read_safetensors(std::string(HFTRAIN_TEST_FIXTURES_DIR) + "/ema.safetensors", &metadata);
  const std::map<std::string, torch::Tensor> f(list.begin(), list.end());
  const Json fixture = Json::parse(metadata.at("fixture"));
  const bool exact = same_cpu_kernels(fixture);
  const int steps = fixture.at("steps").get<int>();
  const Json& adamw = fixture.at("adamw");
  REQUIRE(fixture.at("cases").size() == 4);
  double worst = 0;
  for (const auto& [case_name, c] : fixture.at("cases").items()) {
    std::vector<optim::ParamGroup> groups(1);
    groups[0].base_lr = groups[0].lr = adamw["lr"].get<double>();
    groups[0].weight_decay = adamw["weight_decay"].get<double>();
    optim::NamedParams params;
    for (const auto& [name, shape] : fixture.at("shapes").items()) {
      auto p = f.at(case_name + "/init/" + name).clone().set_requires_grad(true);
      groups[0].names.push_back(name);
      groups[0].params.push_back(p);
      params.emplace_back(name, p);
    }
    auto opt = optim::with_ema(
        optim::make_fused_adamw(std::move(groups), {.beta1 = adamw["betas"][0].get<double>(),
                                                    .beta2 = adamw["betas"][1].get<double>(),
                                                    .eps = adamw["eps"].get<double>()}),
        ema_of(c));
    const auto& ema = ema_of(*opt);
    for (int step = 0; step < steps; ++step) {
      for (auto& [name, p] : params) {
        const auto it = f.find(case_name + "/grad/" + std::to_string(step) + "/" + name);
        p.mutable_grad() = it == f.end() ? torch::Tensor() : it->second.clone();
      }
      opt->step();
      for (size_t i = 0; i < params.size(); ++i) {
        const std::string& name = params[i].first;
        const std::string at = "/" + std::to_string(step + 1) + "/" + name;
        INFO(case_name << ", after step " << step + 1 << ", " << name);
        CHECK(torch::equal(params[i].second, f.at(case_name + "/param" + at)));  // the same fused kernel
        const torch::Tensor& average = ema.averages()[i];
        const double d = max_abs_diff(average, f.at(case_name + "/ema" + at));
        worst = std::max(worst, d);
        if (exact) {
          CHECK(torch::equal(average, f.at(case_name + "/ema" + at)));
        } else {
          CHECK(d <= 1e-7);
        }
      }
    }
    CHECK(ema.updates() == steps / c["every"].get<int>());
  }
  WARN("largest difference from diffusers' EMAModel: " << worst);
}

TEST_CASE("EMA decay warms up as diffusers' get_decay", "[optim][ema]") {
  config::EmaConfig e = default_ema();
  e.decay = 0.999;
  CHECK(optim::ema_decay(e, 1) == 0.0);  // the first update copies the weights
  CHECK(optim::ema_decay(e, 2) == Approx(2.0 / 11.0));
  CHECK(optim::ema_decay(e, 100) == Approx(100.0 / 109.0));
  CHECK(optim::ema_decay(e, 100000) == 0.999);
  e.start_step = 3;
  CHECK(optim::ema_decay(e, 4) == 0.0);
  CHECK(optim::ema_decay(e, 5) == Approx(2.0 / 11.0));
  e.start_step = 0;
  e.warmup = config::EmaWarmup::kPower;
  e.power = 0.75;
  e.inv_gamma = 2.0;
  CHECK(optim::ema_decay(e, 3) == Approx(1.0 - std::pow(1.0 + 2.0 / 2.0, -0.75)));
  e.min_decay = 0.5;
  CHECK(optim::ema_decay(e, 2) == 0.5);  // at least min_decay once warming up
  CHECK(optim::ema_decay(e, 1) == 0.0);  // but the first update still copies
  e.warmup = config::EmaWarmup::kNone;
  CHECK(optim::ema_decay(e, 2) == 0.999);
}

TEST_CASE("EMA weights swap the average in to evaluate and export, and the trained weights back exactly",
          "[optim][ema]") {
  auto params = make_params();
  auto opt = make(params, default_ema());
  REQUIRE(opt->keeps_two_points());
  // Before any step there is no average: nothing changes.
  CHECK_FALSE(opt->hold_weights_for(Use::kEvaluate));
  CHECK(opt->hold_weights_for(Use::kTrain) == false);
  step_with_late_grads(*opt, params, 0, 5);
  const auto trained = clone_params(params);
  const auto& ema = ema_of(*opt);
  std::vector<torch::Tensor> averages;
  for (const auto& a : ema.averages()) averages.push_back(a.clone());
  CHECK_FALSE(torch::equal(averages[0], trained[0].second));

  CHECK(opt->hold_weights_for(Use::kEvaluate));
  for (size_t i = 0; i < params.size(); ++i) CHECK(torch::equal(params[i].second, averages[i]));
  CHECK_FALSE(opt->hold_weights_for(Use::kExport));  // already held
  // The state names the average wherever it lives.
  for (const auto& [key, t] : opt->state().tensors) {
    if (key == "w/ema") CHECK(torch::equal(t, averages[0]));
  }
  CHECK_THROWS_AS(opt->step(), std::logic_error);
  CHECK(opt->hold_weights_for(Use::kCheckpoint));
  CHECK(same_params(params, trained));
  CHECK_FALSE(opt->hold_weights_for(Use::kTrain));

  // Asked for neither, the parameters keep the trained weights.
  config::EmaConfig off = default_ema();
  off.evaluate = false;
  off.export_final = false;
  auto params_b = clone_params(params);
  auto b = make(params_b, off);
  CHECK_FALSE(b->keeps_two_points());
  step_with_late_grads(*b, params_b, 0, 2);
  const auto before = clone_params(params_b);
  CHECK_FALSE(b->hold_weights_for(Use::kEvaluate));
  CHECK_FALSE(b->hold_weights_for(Use::kExport));
  CHECK(same_params(params_b, before));
}

TEST_CASE("EMA weights resume bit for bit, the average saved with the optimizer state", "[optim][ema][state]") {
  config::EmaConfig every2 = default_ema();
  every2.every = 2;
  every2.start_step = 1;
  for (const auto& e : {default_ema(), every2}) {
    INFO("every " << e.every);
    check_exact_resume(make_params(), [&](const optim::NamedParams& p) { return make(p, e); }, 3, 7);
  }
  auto params = make_params();
  auto opt = make(params, every2);
  step_with_late_grads(*opt, params, 0, 3);
  const auto state = opt->state();
  CHECK(state.meta["optimizer"] == "adamw");
  CHECK(state.meta["ema"]["steps"] == 3);
  CHECK(state.meta["ema"]["updates"] == 1);
  std::map<std::string, std::vector<int64_t>> shape;
  for (const auto& [key, t] : state.tensors) shape[key] = t.sizes().vec();
  CHECK(shape["w/ema"] == std::vector<int64_t>{6, 5});
  CHECK(shape["late.weight/ema"] == std::vector<int64_t>{3, 4});  // averaged before it has a gradient
  CHECK(shape["never.weight/ema"] == std::vector<int64_t>{2, 2});
  CHECK(shape["w/exp_avg"] == std::vector<int64_t>{6, 5});
}

TEST_CASE("EMA turned on at a resume starts from the loaded weights", "[optim][ema][state]") {
  auto params = make_params();
  auto plain = optim::make_fused_adamw(groups_of(params, {"w"}, 0.05, 0.1), {});
  step_with_late_grads(*plain, params, 0, 3);
  const auto saved = through_cpu(plain->state());
  auto params_b = clone_params(params);
  auto b = make(params_b, default_ema());
  b->load_state(saved);
  CHECK(ema_of(*b).updates() == 0);
  // Its first update copies the weights (decay 0): the average is the weights after the step.
  step_with_late_grads(*b, params_b, 3, 4);
  // (average - (average - weights) rounds to the weights within an ulp.)
  for (size_t i = 0; i < params_b.size(); ++i) CHECK(max_abs_diff(ema_of(*b).averages()[i], params_b[i].second) < 1e-6);
}

TEST_CASE("EMA weights stay as they were on a step dropped on the device", "[optim][ema]") {
  auto params = make_params();
  auto opt = make(params, default_ema());
  REQUIRE(opt->skips_on_device());
  step_with_late_grads(*opt, params, 0, 3);
  std::vector<torch::Tensor> before;
  for (const auto& a : ema_of(*opt).averages()) before.push_back(a.clone());
  const auto weights = clone_params(params);
  set_step_grads(params, 3, 3);
  opt->skip_next_if(torch::ones({}, torch::kFloat32));
  opt->step();
  opt->skip_next_if(torch::Tensor());
  CHECK(same_params(params, weights));
  for (size_t i = 0; i < before.size(); ++i) CHECK(torch::equal(ema_of(*opt).averages()[i], before[i]));
  // A flag of 0 updates as no flag does.
  auto params_b = clone_params(params);
  auto b = make(params_b, default_ema());
  b->load_state(through_cpu(opt->state()));
  set_step_grads(params, 4, 3);
  set_step_grads(params_b, 4, 3);
  opt->skip_next_if(torch::zeros({}, torch::kFloat32));
  opt->step();
  b->step();
  for (size_t i = 0; i < before.size(); ++i) CHECK(torch::equal(ema_of(*opt).averages()[i], ema_of(*b).averages()[i]));
}

TEST_CASE("EMA weights refuse saved averages that do not fit", "[optim][ema][state]") {
  auto params = make_params();
  auto opt = make(params, default_ema());
  step_with_late_grads(*opt, params, 0, 2);
  const auto saved = through_cpu(opt->state());
  auto params_b = clone_params(params);
  auto b = make(params_b, default_ema());
  auto wrong_shape = saved;
  for (auto& [key, t] : wrong_shape.tensors) {
    if (key == "w/ema") t = torch::zeros({7});
  }
  try {
    b->load_state(wrong_shape);
    FAIL("expected a CheckpointError");
  } catch (const util::CheckpointError& e) {
    CHECK_THAT(std::string(e.what()), Contains("w/ema") && Contains("[7]"));
    CHECK_THAT(e.hint(), Contains("trainer.ema.enabled=false"));
  }
  auto stranger = saved;
  stranger.tensors.emplace_back("nowhere.weight/ema", torch::zeros({2}));
  CHECK_THAT(load_error(*b, stranger), Contains("nowhere.weight/ema"));
  auto no_meta = saved;
  no_meta.meta.erase("ema");
  CHECK_THAT(load_error(*b, no_meta), Contains("meta \"ema\""));
  auto bad_meta = saved;
  bad_meta.meta["ema"]["updates"] = -1;
  CHECK_THAT(load_error(*b, bad_meta), Contains("meta \"ema\""));
  // Nothing changed by the refusals: the state loads and continues.
  b->load_state(saved);
  CHECK(same_state(through_cpu(b->state()), saved));
}
