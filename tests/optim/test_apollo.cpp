// APOLLO AdamW (lib/optim/apollo_adamw.h) replays apollo-torch's APOLLOAdamW
// (tests/fixtures/apollo_adamw.safetensors, from tests/conformance/gen_apollo_fixtures.py): channel
// and tensor scaling, APOLLO-Mini, scale_front, with and without the norm-growth limiter; keeps
// low-rank state and the projection's seed; resumes bit for bit (between projections and at one);
// refuses targets, projections and states that cannot be right.
#include <map>
#include <set>
#include <string>
#include "../torch_catch.h"  // first: see the file

#include <nlohmann/json.hpp>

#include "helpers.h"
#include "model/weights/safetensors.h"
#include "optim/apollo_adamw.h"
#include "util/error.h"

using namespace hftrain;
using namespace hftrain::test;
using Catch::Matchers::Contains;
using Json = nlohmann::json;

namespace {

// The same random projections (the same generator and draws), the same operations in the same
// order: a few float32 roundings apart at most.
constexpr double kTolerance = 1e-5;

config::GaloreProjection projection_of(const std::string& name) {
  if (name == "reverse_std") return config::GaloreProjection::kReverseStd;
  if (name == "right") return config::GaloreProjection::kRight;
  if (name == "left") return config::GaloreProjection::kLeft;
  REQUIRE(name == "std");
  return config::GaloreProjection::kStd;
}

optim::NamedParams make_params() {
  return cos_params({{"layers.0.attn.qkv_proj.weight", {12, 8}},
                     {"layers.0.mlp.down_proj.weight", {6, 10}},
                     {"late.weight", {5, 7}},
                     {"final_norm.weight", {8}},
                     {"never.weight", {4, 4}}});
}

const std::set<std::string> kDecay = {"layers.0.attn.qkv_proj.weight", "layers.0.mlp.down_proj.weight",
                                      "late.weight", "never.weight"};

std::unique_ptr<optim::Optimizer> make_apollo(const optim::NamedParams& params, optim::ApolloSettings s) {
  auto groups = groups_of(params, kDecay, 0.01, 0.1);
  optim::NamedParams ordered;
  for (const auto& g : groups) {
    for (size_t i = 0; i < g.params.size(); ++i) ordered.emplace_back(g.names[i], g.params[i]);
  }
  return optim::make_apollo_adamw(std::move(groups), optim::apollo_targets({"*.attn.*", "*.mlp.*", "late.*"}, ordered),
                                  s);
}

const optim::ApolloSettings kSettings{.rank = 3, .update_proj_gap = 2};

}  // namespace

TEST_CASE("APOLLO AdamW follows apollo-torch step by step for channel and tensor scaling", "[optim][apollo]") {
  std::map<std::string, std::string> metadata;
  const auto list =
      model::read_safetensors(std::string(HFTRAIN_TEST_FIXTURES_DIR) + "/apollo_adamw.safetensors", &metadata);
  const std::map<std::string, torch::Tensor> f(list.begin(), list.end());
  const Json fixture = Json::parse(metadata.at("fixture"));
  const int steps = fixture.at("steps").get<int>();
  const auto targeted = fixture.at("targeted").get<std::set<std::string>>();
  REQUIRE(fixture.at("cases").size() == 5);
  double worst = 0;
  for (const auto& [case_name, c] : fixture.at("cases").items()) {
    // apollo-torch's groups: the targeted matrices with weight decay, then the vector without.
    std::vector<optim::ParamGroup> groups(2);
    for (auto& g : groups) g.base_lr = g.lr = c["lr"].get<double>();
    groups[0].weight_decay = c["weight_decay"].get<double>();
    std::vector<bool> flags;
    optim::NamedParams params;
    for (const std::string name : {"tall", "wide", "late", "bias"}) {
      auto p = f.at(case_name + "/init/" + name).clone().set_requires_grad(true);
      auto& g = groups[targeted.count(name) ? 0 : 1];
      g.names.push_back(name);
      g.params.push_back(p);
      flags.push_back(targeted.count(name) > 0);
      params.emplace_back(name, p);
    }
    const optim::ApolloSettings s{
        .beta1 = c["betas"][0].get<double>(),
        .beta2 = c["betas"][1].get<double>(),
        .eps = c["eps"].get<double>(),
        .rank = c["rank"].get<int64_t>(),
        .update_proj_gap = c["update_proj_gap"].get<int64_t>(),
        .scale = c["scale"].get<double>(),
        .scale_type = c["scale_type"] == "channel" ? config::ApolloScale::kChannel : config::ApolloScale::kTensor,
        .proj_type = projection_of(c["proj_type"].get<std::string>()),
        .scale_front = c["scale_front"].get<bool>(),
        .norm_growth_limiter = !c["disable_nl"].get<bool>()};
    auto opt = optim::make_apollo_adamw(std::move(groups), flags, s);
    for (int step = 0; step < steps; ++step) {
      for (auto& [name, p] : params) {
        auto it = f.find(case_name + "/grad/" + std::to_string(step) + "/" + name);
        p.mutable_grad() = it == f.end() ? torch::Tensor() : it->second.clone();
      }
      opt->step();
      for (const auto& [name, p] : params) {
        INFO(case_name << ", after step " << step + 1 << ", " << name);
        const double d = max_abs_diff(p, f.at(case_name + "/param/" + std::to_string(step + 1) + "/" + name));
        worst = std::max(worst, d);
        CHECK(d <= kTolerance);
      }
    }
  }
  WARN("largest difference from apollo-torch: " << worst);
}

TEST_CASE("APOLLO AdamW keeps low-rank moments, the projection and its seed in the state", "[optim][apollo][state]") {
  auto params = make_params();
  auto opt = make_apollo(params, kSettings);
  step_with_late_grads(*opt, params, 0, 2);
  const auto state = opt->state();
  std::map<std::string, std::vector<int64_t>> shape;
  for (const auto& [key, t] : state.tensors) shape[key] = t.sizes().vec();
  const std::string tall = "layers.0.attn.qkv_proj.weight";  // 12 x 8: right, R is 12 x 3, P 3 x 8
  const std::string wide = "layers.0.mlp.down_proj.weight";  // 6 x 10: left, R is 3 x 10, P 6 x 3
  CHECK(shape[tall + "/exp_avg"] == std::vector<int64_t>{12, 3});
  CHECK(shape[tall + "/ortho"] == std::vector<int64_t>{3, 8});
  CHECK(shape[wide + "/exp_avg_sq"] == std::vector<int64_t>{3, 10});
  CHECK(shape[wide + "/ortho"] == std::vector<int64_t>{6, 3});
  CHECK(shape[tall + "/seed"].empty());
  CHECK(shape[tall + "/scaled_grad_norm"].empty());
  CHECK(shape["final_norm.weight/exp_avg"] == std::vector<int64_t>{8});
  CHECK_FALSE(shape.count("final_norm.weight/seed"));
  CHECK_FALSE(shape.count("late.weight/exp_avg"));
  CHECK(state.meta["optimizer"] == "apollo_adamw");
  CHECK(state.meta["steps"][tall] == 2);
  CHECK(state.meta["hyperparameters"]["scale_type"] == "channel");
}

TEST_CASE("APOLLO AdamW resumes bit for bit, between projections and at one", "[optim][apollo][state]") {
  for (const int saved_at : {3, 4}) {
    for (const auto scale : {config::ApolloScale::kChannel, config::ApolloScale::kTensor}) {
      INFO("saved after step " << saved_at << ", scale_type " << static_cast<int>(scale));
      optim::ApolloSettings s = kSettings;
      s.scale_type = scale;
      check_exact_resume(make_params(), [&](const optim::NamedParams& p) { return make_apollo(p, s); }, saved_at, 8);
    }
  }
}

TEST_CASE("APOLLO AdamW refuses targets, projections and states that do not fit", "[optim][apollo][state]") {
  auto params = make_params();
  CHECK_THROWS_WITH(optim::apollo_targets({"*.nowhere.*"}, params), Contains("'*.nowhere.*' matches no weight matrix"));
  CHECK_THROWS_WITH(optim::apollo_targets({}, params), Contains("optimizer.apollo.target_modules"));
  // Channel factors of a tall matrix run along its rows: a left projection cannot give them.
  optim::ApolloSettings s = kSettings;
  s.proj_type = config::GaloreProjection::kReverseStd;
  CHECK_THROWS_WITH(make_apollo(params, s), Contains("proj_type=reverse_std"));
  s.scale_type = config::ApolloScale::kTensor;
  CHECK_NOTHROW(make_apollo(params, s));
  s.proj_type = config::GaloreProjection::kFull;
  CHECK_THROWS_WITH(make_apollo(params, s), Contains("full"));

  auto opt = make_apollo(params, kSettings);
  step_with_late_grads(*opt, params, 0, 2);
  const auto saved = through_cpu(opt->state());
  optim::ApolloSettings other = kSettings;
  other.rank = 4;
  auto params_b = clone_params(params);
  auto b = make_apollo(params_b, other);
  CHECK_THAT(load_error(*b, saved), Contains("layers.0.attn.qkv_proj.weight"));
  auto wrong = saved;
  wrong.meta["optimizer"] = "galore_adamw";
  CHECK_THAT(load_error(*b, wrong), Contains("galore_adamw"));
}
