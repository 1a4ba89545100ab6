#include <catch2/catch.hpp>

#include "../config/helpers.h"
#include "optim/param_groups.h"

using namespace hftrain;
using Catch::Matchers::Contains;

namespace {
const std::vector<std::string> kNames = {"embed_tokens.weight", "layers.0.attn_norm.weight",
                                         "layers.0.attn.qkv_proj.weight", "layers.0.attn.qkv_proj.bias",
                                         "final_norm.weight", "lm_head.weight"};
}

TEST_CASE("by default biases, norms and embeddings get no weight decay", "[optim][groups]") {
  auto cfg = test::resolve(test::kMinimal, {"optimizer.weight_decay=0.1", "optimizer.lr=0.001"}).values;
  auto g = optim::group_parameters(kNames, cfg.optimizer);
  REQUIRE(g.groups.size() == 2);
  CHECK(g.groups[0].weight_decay == 0.0);  // embed_tokens comes first
  CHECK(g.groups[1].weight_decay == Approx(0.1));
  CHECK(g.group_of == std::vector<size_t>{0, 0, 1, 0, 0, 1});
}

TEST_CASE("per-glob learning rates and weight decay", "[optim][groups]") {
  auto cfg = test::resolve(test::kMinimal, {"optimizer.weight_decay=0.1", "optimizer.lr=0.001",
                                            "optimizer.group_lr={'lm_head.*': 0.0001}",
                                            "optimizer.group_weight_decay={'embed_*': 0.01}"})
                 .values;
  auto g = optim::group_parameters(kNames, cfg.optimizer);
  REQUIRE(g.groups.size() == 4);
  const auto& lm_head = g.groups[g.group_of[5]];
  CHECK(lm_head.lr == Approx(0.0001));
  CHECK(lm_head.weight_decay == Approx(0.1));
  CHECK(g.groups[g.group_of[0]].weight_decay == Approx(0.01));  // the glob beats no_decay
}

TEST_CASE("group globs that overlap or match nothing are config errors", "[optim][groups]") {
  auto overlap = test::resolve(test::kMinimal, {"optimizer.group_lr={'layers.*': 0.1, '*.bias': 0.2}"}).values;
  CHECK_THROWS_WITH(optim::group_parameters(kNames, overlap.optimizer), Contains("matches two globs"));
  auto typo = test::resolve(test::kMinimal, {"optimizer.group_lr={'lm_haed.*': 0.1}"}).values;
  CHECK_THROWS_WITH(optim::group_parameters(kNames, typo.optimizer), Contains("matches no parameter"));
}
