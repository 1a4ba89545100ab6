// hftrain's optimizers replay the parameter trajectories recorded from the references in
// tests/fixtures/optimizers.json (tests/conformance/gen_optimizer_fixtures.py): torch.optim's
// AdamW and SGD, transformers.Adafactor, and Lion's published update rule.
#include "../torch_catch.h"  // first: see the file
#include <fstream>

#include <nlohmann/json.hpp>

#include "../config/helpers.h"
#include "optim/optimizer.h"

using namespace hftrain;
using Json = nlohmann::json;

namespace {

torch::Tensor tensor_of(const Json& values, const Json& shape) {
  std::vector<float> v = values.get<std::vector<float>>();
  std::vector<int64_t> s = shape.get<std::vector<int64_t>>();
  return torch::from_blob(v.data(), s, torch::kFloat32).clone();
}

std::vector<std::string> overrides_for(const Json& c) {
  std::vector<std::string> o = {"optimizer.name=" + c["name"].get<std::string>(), "optimizer.no_decay=[b, v]"};
  for (const auto& [k, v] : c["options"].items()) {
    const std::string key = c["name"] == "adafactor" && k == "beta1" ? "optimizer.adafactor.beta1" : "optimizer." + k;
    o.push_back(key + "=" + v.dump());
  }
  return o;
}

}  // namespace

TEST_CASE("optimizers follow their reference implementations step by step", "[optim][optimizer]") {
  std::ifstream in(std::string(HFTRAIN_TEST_FIXTURES_DIR) + "/optimizers.json");
  REQUIRE(in.good());
  const Json f = Json::parse(in);
  for (const auto& c : f["cases"]) {
    INFO(c["name"].get<std::string>() << " " << c["options"].dump());
    const auto cfg = test::resolve(test::kMinimal, overrides_for(c)).values;
    optim::NamedParams params;
    for (const char* name : {"w", "b", "v"}) {
      auto t = tensor_of(f["init"][name], f["shapes"][name]);
      t.set_requires_grad(true);
      params.emplace_back(name, t);
    }
    auto opt = optim::make_optimizer(cfg.optimizer, params);
    for (size_t step = 0; step < c["steps"].size(); ++step) {
      INFO("step " << step);
      if (!c["lr_factors"].is_null()) opt->set_lr_factor(c["lr_factors"][step].get<double>());
      for (auto& [name, p] : params) p.mutable_grad() = tensor_of(f["grads"][step][name], f["shapes"][name]);
      opt->step();
      for (auto& [name, p] : params) {
        auto expected = tensor_of(c["steps"][step][name], f["shapes"][name]);
        INFO(name << " max abs diff " << (p - expected).abs().max().item<float>());
        CHECK(torch::allclose(p.detach(), expected, /*rtol=*/1e-5, /*atol=*/1e-6));
      }
    }
  }
}

TEST_CASE("set_lr_factor scales every group's own base lr", "[optim][optimizer]") {
  const auto cfg = test::resolve(test::kMinimal, {"optimizer.lr=0.01", "optimizer.group_lr={'b': 0.5}"}).values;
  optim::NamedParams params = {{"w", torch::zeros({2, 2}, torch::requires_grad())},
                               {"b", torch::zeros({2}, torch::requires_grad())}};
  auto opt = optim::make_optimizer(cfg.optimizer, params);
  opt->set_lr_factor(0.5);
  REQUIRE(opt->groups().size() == 2);
  CHECK(opt->groups()[0].lr == Approx(0.005));
  CHECK(opt->groups()[1].lr == Approx(0.25));
}
