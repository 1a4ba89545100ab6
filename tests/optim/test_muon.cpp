// Muon (lib/optim/muon.h) replays torch.optim.Muon with torch.optim.AdamW for the other parameters
// (tests/fixtures/muon.safetensors, from tests/conformance/gen_muon_fixtures.py), stacked and
// transposed matrices included; resumes bit for bit; and refuses targets and states that cannot be
// right.
#include <map>
#include <set>
#include <string>
#include "../torch_catch.h"  // first: see the file

#include <nlohmann/json.hpp>

#include "helpers.h"
#include "model/weights/safetensors.h"
#include "optim/fused_adamw.h"
#include "optim/muon.h"
#include "util/error.h"

using namespace hftrain;
using namespace hftrain::test;
using Catch::Matchers::Contains;
using Json = nlohmann::json;

namespace {

// The Newton-Schulz iteration runs in bf16 with the reference's operations in its order and
// memory layout: the same bits on the same kernels. torch.optim.AdamW's foreach arithmetic and
// ATen's fused kernel round a few operations apart: 1e-7 here.
constexpr double kTolerance = 1e-5;

// The fixture's tensor `name` as hftrain holds it: q, k and v stacked as "qkv", conv transposed.
torch::Tensor as_ours(const std::map<std::string, torch::Tensor>& f, const std::string& prefix,
                      const std::string& name) {
  auto get = [&](const std::string& n) {
    auto it = f.find(prefix + n);
    return it == f.end() ? torch::Tensor() : it->second;
  };
  if (name == "qkv") return torch::cat({get("q"), get("k"), get("v")});
  if (name == "conv_t") {
    const torch::Tensor t = get("conv");
    return t.defined() ? t.t().contiguous() : t;
  }
  return get(name);
}

const std::vector<std::string> kOurs = {"tall", "wide", "qkv", "conv_t", "late", "embed", "bias"};

optim::MuonMatrices fixture_matrices() {
  return {{"tall", {}}, {"wide", {}}, {"qkv", {{8, 4, 4}, false}}, {"conv_t", {{}, true}}, {"late", {}}};
}

optim::MuonSettings settings_of(const Json& c) {
  return {.momentum = c["momentum"].get<double>(),
          .nesterov = c["nesterov"].get<bool>(),
          .ns_steps = c["ns_steps"].get<int64_t>(),
          .eps = c["eps"].get<double>(),
          .adjust_lr = c["adjust_lr_fn"] == "original" ? config::MuonAdjustLr::kOriginal
                                                         : config::MuonAdjustLr::kMatchRmsAdamw,
          .beta1 = c["betas"][0].get<double>(),
          .beta2 = c["betas"][1].get<double>(),
          .adam_eps = c["adam_eps"].get<double>()};
}

// A model-shaped set: stacked qkv (8, 4, 4 rows), a GPT-2 Conv1D weight, a late matrix, an
// embedding and a vector; muon_targets' default picks the hidden matrices of `layout`.
optim::NamedParams make_params() {
  return cos_params({{"layers.0.attn.qkv_proj.weight", {16, 8}},
                     {"layers.0.mlp.c_fc.weight", {20, 8}},
                     {"late.weight", {5, 7}},
                     {"embed_tokens.weight", {15, 8}},
                     {"final_norm.weight", {8}},
                     {"never.weight", {4, 4}}});
}

const optim::ModelMatrices kLayout = {{"layers.0.attn.qkv_proj.weight", {{8, 4, 4}, false}},
                                      {"layers.0.mlp.c_fc.weight", {{}, true}},
                                      {"late.weight", {}},
                                      {"never.weight", {}}};

std::unique_ptr<optim::Optimizer> make(const optim::NamedParams& params, optim::MuonSettings s = {}) {
  auto groups = groups_of(params, {"layers.0.attn.qkv_proj.weight", "layers.0.mlp.c_fc.weight", "late.weight"}, 0.02,
                          0.1);
  return optim::make_muon(std::move(groups), optim::muon_targets({}, params, kLayout), s);
}

}  // namespace

TEST_CASE("Muon follows torch.optim.Muon and AdamW step by step, stacked and transposed matrices too",
          "[optim][muon]") {
  std::map<std::string, std::string> metadata;
  const auto list = model::read_safetensors(std::string(HFTRAIN_TEST_FIXTURES_DIR) + "/muon.safetensors", &metadata);
  const std::map<std::string, torch::Tensor> f(list.begin(), list.end());
  const Json fixture = Json::parse(metadata.at("fixture"));
  const int steps = fixture.at("steps").get<int>();
  REQUIRE(fixture.at("cases").size() == 2);
  double worst = 0;
  for (const auto& [case_name, c] : fixture.at("cases").items()) {
    std::vector<optim::ParamGroup> groups(1);
    groups[0].base_lr = groups[0].lr = c["lr"].get<double>();
    groups[0].weight_decay = c["weight_decay"].get<double>();
    optim::NamedParams params;
    for (const auto& name : kOurs) {
      auto p = as_ours(f, case_name + "/init/", name).clone().set_requires_grad(true);
      groups[0].names.push_back(name);
      groups[0].params.push_back(p);
      params.emplace_back(name, p);
    }
    auto opt = optim::make_muon(std::move(groups), fixture_matrices(), settings_of(c));
    for (int step = 0; step < steps; ++step) {
      for (auto& [name, p] : params) {
        const torch::Tensor g = as_ours(f, case_name + "/grad/" + std::to_string(step) + "/", name);
        p.mutable_grad() = g.defined() ? g.clone() : g;
      }
      opt->step();
      for (const auto& [name, p] : params) {
        INFO(case_name << ", after step " << step + 1 << ", " << name);
        const double d = max_abs_diff(p, as_ours(f, case_name + "/param/" + std::to_string(step + 1) + "/", name));
        worst = std::max(worst, d);
        CHECK(d <= kTolerance);
      }
    }
  }
  WARN("largest difference from torch.optim.Muon + AdamW: " << worst);
}

TEST_CASE("Newton-Schulz gives a matrix of singular values near one, in the input's shape", "[optim][muon]") {
  torch::manual_seed(3);
  for (const auto& shape : {std::vector<int64_t>{12, 5}, std::vector<int64_t>{5, 12}}) {
    const torch::Tensor g = torch::randn(shape);
    const torch::Tensor o = optim::newton_schulz(g, 5, 1e-7);
    CHECK(o.sizes() == g.sizes());
    CHECK(o.scalar_type() == torch::kBFloat16);
    const torch::Tensor s = torch::linalg_svdvals(o.to(torch::kFloat32));
    // Keller Jordan's coefficients leave the singular values in about (0.5, 1.5), not at 1.
    CHECK(s.min().item<double>() > 0.4);
    CHECK(s.max().item<double>() < 1.5);
    // The input is left alone (a bf16 input too: without nesterov it is the momentum buffer).
    const torch::Tensor b = g.to(torch::kBFloat16);
    const torch::Tensor before = b.clone();
    optim::newton_schulz(b, 5, 1e-7);
    CHECK(torch::equal(b, before));
  }
}

TEST_CASE("Muon keeps a momentum per matrix and AdamW's moments for the rest", "[optim][muon][state]") {
  auto params = make_params();
  auto opt = make(params);
  step_with_late_grads(*opt, params, 0, 2);
  const auto state = opt->state();
  std::map<std::string, std::vector<int64_t>> shape;
  for (const auto& [key, t] : state.tensors) shape[key] = t.sizes().vec();
  CHECK(shape["layers.0.attn.qkv_proj.weight/momentum_buffer"] == std::vector<int64_t>{16, 8});
  CHECK_FALSE(shape.count("layers.0.attn.qkv_proj.weight/exp_avg"));
  CHECK(shape["embed_tokens.weight/exp_avg"] == std::vector<int64_t>{15, 8});
  CHECK(shape["final_norm.weight/exp_avg_sq"] == std::vector<int64_t>{8});
  CHECK_FALSE(shape.count("late.weight/momentum_buffer"));  // no gradient yet
  CHECK_FALSE(shape.count("never.weight/momentum_buffer"));
  CHECK(state.meta["optimizer"] == "muon");
  CHECK(state.meta["steps"]["layers.0.attn.qkv_proj.weight"] == 2);
  CHECK(state.meta["steps"]["embed_tokens.weight"] == 2);
  CHECK(state.meta["hyperparameters"]["ns_steps"] == 5);
}

TEST_CASE("Muon resumes bit for bit", "[optim][muon][state]") {
  for (const bool nesterov : {true, false}) {
    INFO("nesterov " << nesterov);
    const optim::MuonSettings s{.nesterov = nesterov};
    check_exact_resume(make_params(), [&](const optim::NamedParams& p) { return make(p, s); }, 4, 7);
  }
}

TEST_CASE("Muon's AdamW part follows the schedule as AdamW alone would", "[optim][muon]") {
  auto params = make_params();
  auto alone = clone_params(params);
  auto opt = make(params);
  opt->set_lr_factor(0.5);
  // The same groups' AdamW parameters, at half the base lr: what the schedule's factor must give.
  optim::NamedParams adam_params = {alone[3], alone[4]};
  auto adamw = optim::make_fused_adamw(groups_of(adam_params, {}, 0.01, 0.1), {});
  for (int step = 0; step < 3; ++step) {
    set_step_grads(params, step, 3);
    set_step_grads(alone, step, 3);
    opt->step();
    adamw->step();
  }
  CHECK(torch::equal(params[3].second, alone[3].second));
  CHECK(torch::equal(params[4].second, alone[4].second));
}

TEST_CASE("Muon refuses targets and states that do not fit", "[optim][muon][state]") {
  auto params = make_params();
  CHECK_THROWS_WITH(optim::muon_targets({"*.nowhere.*"}, params, kLayout), Contains("'*.nowhere.*' matches no"));
  CHECK_THROWS_WITH(optim::muon_targets({"final_norm.*"}, params, kLayout), Contains("1 dimensions"));
  CHECK_THROWS_WITH(optim::muon_targets({}, params, {}), Contains("none of the trained parameters"));
  // A glob takes the layout's parts where it knows the parameter, the whole matrix elsewhere.
  const auto chosen = optim::muon_targets({"layers.*", "embed_tokens.*"}, params, kLayout);
  CHECK(chosen.size() == 3);
  CHECK(chosen.at("layers.0.attn.qkv_proj.weight").row_parts == std::vector<int64_t>{8, 4, 4});
  CHECK(chosen.at("embed_tokens.weight").row_parts.empty());
  std::vector<optim::ParamGroup> groups(1);
  groups[0].names = {"layers.0.attn.qkv_proj.weight"};
  groups[0].params = {params[0].second};
  CHECK_THROWS_WITH(optim::make_muon(groups, {{"layers.0.attn.qkv_proj.weight", {{8, 4}, false}}}, {}),
                    Contains("add up to 12 rows"));

  // Another optimizer's state, or a matrix saved with AdamW's moments, is a CheckpointError.
  auto opt = make(params);
  step_with_late_grads(*opt, params, 0, 2);
  const auto saved = through_cpu(opt->state());
  auto params_b = clone_params(params);
  auto b = make(params_b);
  auto wrong = saved;
  wrong.meta["optimizer"] = "adamw";
  CHECK_THAT(load_error(*b, wrong), Contains("adamw"));
  auto swapped = saved;
  for (auto& [key, t] : swapped.tensors) {
    if (key == "layers.0.attn.qkv_proj.weight/momentum_buffer") key = "layers.0.attn.qkv_proj.weight/exp_avg";
  }
  CHECK_THAT(load_error(*b, swapped), Contains("exp_avg"));
}
