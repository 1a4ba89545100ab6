#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "config/emit.h"
#include "helpers.h"
#include "util/fs.h"

using namespace hftrain;
using namespace hftrain::test;
using Catch::Matchers::Contains;

namespace {
const char* kRecipe =
    "run: {name: 'true', tags: {team: nlp}}\n"
    "trainer: {max_steps: 50, max_grad_norm: .inf, precision: bf16}\n"
    "data: {train: ['a b.txt', '123'], validation: []}\n"
    "model: {from: null}\n"
    "distributed: {strategy: fsdp}\n";
}

TEST_CASE("the emitted YAML resolves back to the same config", "[config][emit]") {
  const auto& schema = config::product_schema();
  auto first = resolve(kRecipe, {"+run.tags.sweep=7", "optimizer.lr=0.00125"});
  std::string yaml = config::to_yaml(first, schema, false);
  auto second = resolve(yaml);
  CHECK(config::to_yaml(second, schema, false) == yaml);
  CHECK(second.values.run.name == "true");  // a string that looks like a bool stays a string
  CHECK(second.values.data.train == paths_of({"a b.txt", "123"}));
  CHECK(std::isinf(second.values.trainer.max_grad_norm));
  CHECK(second.values.distributed.strategy == config::Strategy::kZero3);
  CHECK(second.values.optimizer.lr == 0.00125);
  CHECK(second.values.run.tags.at("sweep") == "7");
  // With provenance comments it still reads back the same.
  auto third = resolve(config::to_yaml(first, schema, true));
  CHECK(config::to_yaml(third, schema, false) == yaml);
}

// A list of floats (longrope's factors): written as a flow list, read back to the same numbers,
// in YAML and JSON.
TEST_CASE("lists of floats round-trip through YAML and JSON", "[config][emit]") {
  const auto& schema = config::product_schema();
  auto first =
      resolve(kMinimal, {"model.rope_scaling.short_factor=[1, 1.5, 2.25e-1]", "model.rope_scaling.long_factor=[]"});
  CHECK(first.values.model.rope_scaling.short_factor == std::vector<double>{1.0, 1.5, 0.225});
  CHECK(first.values.model.rope_scaling.long_factor.empty());
  const std::string yaml = config::to_yaml(first, schema, false);
  CHECK_THAT(yaml, Contains("short_factor: [1.0, 1.5, 0.225]"));
  CHECK(resolve(yaml).values.model.rope_scaling.short_factor == first.values.model.rope_scaling.short_factor);
  auto json = nlohmann::json::parse(config::to_json(first, schema, false));
  CHECK(json["model"]["rope_scaling"]["short_factor"] == nlohmann::json::array({1.0, 1.5, 0.225}));
}

TEST_CASE("provenance comments name each value's origin", "[config][emit]") {
  auto r = resolve(kRecipe, {"optimizer.lr=0.5"});
  std::string yaml = config::to_yaml(r, config::product_schema(), true);
  CHECK_THAT(yaml, Contains("lr: 0.5  # command line `optimizer.lr=0.5`"));
  CHECK_THAT(yaml, Contains("max_steps: 50  # recipe.yaml:2:22"));
  CHECK_THAT(yaml, Contains("n_layer: 12  # default"));
  CHECK_THAT(yaml, Contains("team: nlp  # recipe.yaml:1:34"));
}

TEST_CASE("JSON output, plain and with provenance", "[config][emit]") {
  auto r = resolve(kRecipe);
  auto plain = nlohmann::json::parse(config::to_json(r, config::product_schema(), false));
  CHECK(plain["trainer"]["max_steps"] == 50);
  CHECK(plain["trainer"]["max_grad_norm"] == ".inf");
  CHECK(plain["model"]["from"].is_null());
  auto prov = nlohmann::json::parse(config::to_json(r, config::product_schema(), true));
  CHECK(prov["trainer"]["precision"]["value"] == "bf16");
  CHECK(prov["trainer"]["precision"]["origin"] == "recipe.yaml:2:58");
}

TEST_CASE("schema listings cover every key", "[config][emit]") {
  const auto& schema = config::product_schema();
  std::string text = config::schema_text(schema);
  std::string md = config::schema_markdown(schema);
  auto json = nlohmann::json::parse(config::schema_json(schema));
  CHECK(json.size() == schema.keys().size());
  for (const auto& k : schema.keys()) {
    CHECK_THAT(text, Contains(k.path));
    CHECK_THAT(md, Contains("`" + k.path + "`"));
  }
  CHECK_THAT(text, Contains("optimizer.lr  (float, default 3.0e-4, range [0, 10]; on resume: changes training)"));
  CHECK_THAT(md, Contains("one of fp32\\|bf16\\|fp16"));
}

TEST_CASE("write_resolved_config writes config.yaml that resolves again", "[config][emit]") {
  TempDir d;
  auto r = resolve(kRecipe);
  config::write_resolved_config(r, config::product_schema(), d.path() / "run");
  std::string text = util::read_file<util::IoError>(d.path() / "run" / "config.yaml", "config");
  CHECK_THAT(text, Contains("# Resolved by hftrain"));
  auto again = resolve(text);
  CHECK(config::to_yaml(again, config::product_schema(), false) ==
        config::to_yaml(r, config::product_schema(), false));
}
