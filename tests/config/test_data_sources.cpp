// data.train and data.validation entries: paths, or mappings {path, weight, name, format, ...}
// for weighted mixtures and per-source fields; their errors; writing them back.
#include <catch2/catch.hpp>

#include "config/emit.h"
#include "helpers.h"

using namespace hftrain;
using namespace hftrain::test;
using Catch::Matchers::Contains;

namespace {
const char* kMixture =
    "trainer: {max_steps: 10}\n"
    "data:\n"
    "  train:\n"
    "    - {path: chat.jsonl, weight: 0.7, format: chat, messages_field: turns}\n"
    "    - path: 'web/*.txt'\n"
    "      weight: 0.3\n"
    "      name: web\n"
    "      separator: '%'\n"
    "  validation: [val-chat.jsonl, {path: val-web.txt, name: web}]\n";
}

TEST_CASE("data sources: paths and mappings with per-source fields", "[config][sources]") {
  const auto c = resolve(kMixture).values;
  REQUIRE(c.data.train.size() == 2);
  const auto& chat = c.data.train[0];
  CHECK(chat.path == "chat.jsonl");
  CHECK(chat.weight == 0.7);
  CHECK(chat.format == config::DataFormat::kChat);
  CHECK(chat.messages_field == "turns");
  CHECK(!chat.text_field);
  const auto& web = c.data.train[1];
  CHECK(web.path == "web/*.txt");
  CHECK(web.name == "web");
  CHECK(web.separator == "%");
  REQUIRE(c.data.validation.size() == 2);
  CHECK(c.data.validation[0].plain());
  CHECK(c.data.validation[1].name == "web");
}

TEST_CASE("data sources: mappings come from the command line as YAML flow", "[config][sources]") {
  const auto c = resolve(kMinimal, {"data.train=[{path: a.jsonl, weight: 2}, {path: b.jsonl, weight: 1}]",
                                    "data.validation={path: v.jsonl, name: held-out}"})
                     .values;
  REQUIRE(c.data.train.size() == 2);
  CHECK(c.data.train[0].weight == 2.0);
  CHECK(c.data.train[1].path == "b.jsonl");
  REQUIRE(c.data.validation.size() == 1);  // a single mapping is a list of one
  CHECK(c.data.validation[0].name == "held-out");
}

TEST_CASE("data sources: the written config reads back the same", "[config][sources]") {
  const auto& schema = config::product_schema();
  const auto first = resolve(kMixture);
  const std::string yaml = config::to_yaml(first, schema, false);
  CHECK_THAT(yaml, Contains("path: chat.jsonl"));
  const auto second = resolve(yaml);
  CHECK(second.values.data.train == first.values.data.train);
  CHECK(second.values.data.validation == first.values.data.validation);
  CHECK(config::to_yaml(second, schema, false) == yaml);
  CHECK(resolve(config::to_yaml(first, schema, true)).values.data.train == first.values.data.train);
  const std::string json = config::to_json(first, schema, false);
  CHECK_THAT(json, Contains("\"weight\": 0.7"));
}

TEST_CASE("data sources: bad entries are named with their line", "[config][sources]") {
  const std::string unknown =
      resolve_error("trainer: {max_steps: 1}\ndata:\n  train:\n    - {path: a.jsonl, wieght: 1}\n");
  CHECK_THAT(unknown, Contains("recipe.yaml:4"));
  CHECK_THAT(unknown, Contains("`data.train` item 1.wieght` is not a field of a data source"));
  CHECK_THAT(unknown, Contains("did you mean `weight`?"));
  CHECK_THAT(resolve_error("trainer: {max_steps: 1}\ndata: {train: [{weight: 1}]}\n"), Contains("has no `path`"));
  CHECK_THAT(resolve_error("trainer: {max_steps: 1}\ndata: {train: [{path: a, weight: -0.5}]}\n"),
             Contains("out of range"));
  CHECK_THAT(resolve_error("trainer: {max_steps: 1}\ndata: {train: [{path: a, weight: lots}]}\n"),
             Contains("expects a float"));
  CHECK_THAT(resolve_error("trainer: {max_steps: 1}\ndata: {train: [{path: a, format: csv}]}\n"),
             Contains("is not allowed; allowed: auto, text, jsonl, chat, tokens"));
  CHECK_THAT(resolve_error("trainer: {max_steps: 1}\ndata: {train: [[a, b]]}\n"),
             Contains("must be a path or a mapping with a `path`, not a list"));
}

TEST_CASE("data sources: weights for every source or none, not all zero", "[config][sources]") {
  const std::string mixed = resolve_error(kMinimal, {"data.train=[{path: a.jsonl, weight: 1}, b.jsonl]"});
  CHECK_THAT(mixed, Contains("gives weights to 1 of its 2 sources; without a weight: b.jsonl"));
  CHECK_THAT(mixed, Contains("give every source a weight"));
  CHECK_THAT(resolve_error(kMinimal, {"data.train=[{path: a, weight: 0}, {path: b, weight: 0.0}]"}),
             Contains("every weight in `data.train` is 0"));
  CHECK_THAT(resolve_error(kMinimal, {"data.validation=[{path: v, weight: 1}]"}),
             Contains("`data.validation` source v has a weight"));
  // One zero weight among others leaves that source out of the mixture, which is allowed.
  CHECK(resolve(kMinimal, {"data.train=[{path: a, weight: 0}, {path: b, weight: 1}]"}).values.data.train.size() == 2);
}

TEST_CASE("data sources: classification takes plain paths only", "[config][sources]") {
  CHECK_THAT(resolve_error(kMinimal, {"model.arch=bert", "data.train=[{path: a.csv, weight: 1}]"}),
             Contains("classification (model.arch=bert) takes data sources as plain paths"));
  CHECK(resolve(kMinimal, {"model.arch=bert", "data.train=[a.csv]"}).values.data.train.size() == 1);
}
