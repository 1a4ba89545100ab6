#include <catch2/catch.hpp>

#include "config/overrides.h"
#include "helpers.h"

using namespace hftrain;
using namespace hftrain::test;
using Catch::Matchers::Contains;

TEST_CASE("key=value overrides are parsed as YAML", "[config][overrides]") {
  auto c = resolve(kMinimal, {"optimizer.lr=1e-3", "trainer.precision=bf16", "data.train=[a.txt, b.txt]",
                              "run.name='123'", "checkpoint.keep_best=false"}).values;
  CHECK(c.optimizer.lr == Approx(1e-3));
  CHECK(c.trainer.precision == config::Precision::kBf16);
  CHECK(c.data.train == paths_of({"a.txt", "b.txt"}));
  CHECK(c.run.name == "123");
}

TEST_CASE("~key falls back to the default, even over the recipe", "[config][overrides]") {
  auto c = resolve("trainer: {max_steps: 10}\nmodel: {n_layer: 2, d_model: 64, n_head: 4}\n",
                   {"~model.n_layer", "~model"}).values;
  CHECK(c.model.n_layer == 12);
  CHECK(c.model.d_model == 768);
}

TEST_CASE("+key adds only inside free-form maps", "[config][overrides]") {
  auto r = resolve(kMinimal, {"+run.tags.team=nlp", "+run.tags.sweep=3"});
  CHECK(r.values.run.tags.at("team") == "nlp");
  CHECK(r.values.run.tags.at("sweep") == "3");
  CHECK_THAT(resolve_error(kMinimal, {"+optimizer.lr=1"}),
             Contains("adds keys only inside free-form maps") && Contains("write optimizer.lr=1"));
  CHECK_THAT(resolve_error(kMinimal, {"run.tags.team=nlp"}), Contains("write +run.tags.team=nlp"));
  CHECK_THAT(resolve_error("trainer: {max_steps: 1}\nrun: {tags: {a: b}}\n", {"+run.tags.a=c"}),
             Contains("already set"));
  auto removed = resolve("trainer: {max_steps: 1}\nrun: {tags: {a: b, c: d}}\n", {"~run.tags.a"});
  CHECK(removed.values.run.tags.size() == 1);
}

TEST_CASE("malformed overrides are reported together", "[config][overrides]") {
  auto err = resolve_error(kMinimal, {"=3", "a..b=1", "~", "optimizer.lr", "optimizer.lr=", "~a=b",
                                      "defaults=[x]", "optimizer.lr=[1,"});
  CHECK_THAT(err, Contains("8 problems"));
  CHECK_THAT(err, Contains("command line `=3`: no key"));
  CHECK_THAT(err, Contains("command line `a..b=1`: malformed key `a..b`"));
  CHECK_THAT(err, Contains("command line `~`: no key"));
  CHECK_THAT(err, Contains("command line `optimizer.lr`: not an override: no `=`"));
  CHECK_THAT(err, Contains("no value after `=`"));
  CHECK_THAT(err, Contains("takes no value"));
  CHECK_THAT(err, Contains("`defaults` can only be set inside a recipe file"));
  CHECK_THAT(err, Contains("cannot parse the value"));
  // Found by the fuzzer: invalid UTF-8 reached the JSON writer, which threw.
  CHECK_THAT(resolve_error(kMinimal, {"run.name=\xba\xba"}), Contains("not valid UTF-8"));
  util::MapEnvironment env({{"HFTRAIN__RUN__NAME", "\xff"}});
  CHECK_THAT(resolve_error(kMinimal, {}, env), Contains("HFTRAIN__RUN__NAME: is not valid UTF-8"));
}

TEST_CASE("unknown keys get did-you-mean suggestions", "[config][overrides]") {
  CHECK_THAT(resolve_error(kMinimal, {"optimizer.lrr=3"}),
             Contains("command line `optimizer.lrr=3`: unknown key `optimizer.lrr`") &&
                 Contains("did you mean `optimizer.lr`?"));
  CHECK_THAT(resolve_error(std::string(kMinimal) + "lr: 0.1\n"),
             Contains("recipe.yaml:3:1: unknown key `lr`") && Contains("`optimizer.lr`"));
  CHECK_THAT(resolve_error(kMinimal, {"~optimizer.lrr"}), Contains("unknown key `optimizer.lrr`"));
}

TEST_CASE("environment overrides sit between the recipe and the command line", "[config][overrides]") {
  util::MapEnvironment env({{"HFTRAIN__OPTIMIZER__LR", "0.01"}, {"HFTRAIN__TRAINER__LOG_EVERY", "7"}});
  auto r = resolve("trainer: {max_steps: 5, log_every: 3}\noptimizer: {lr: 0.5}\n", {"optimizer.lr=0.02"}, env);
  CHECK(r.values.optimizer.lr == Approx(0.02));  // command line beats environment
  CHECK(r.values.trainer.log_every == 7);        // environment beats recipe
  CHECK(r.tree.find_path({"trainer", "log_every"})->origin().describe() ==
        "environment HFTRAIN__TRAINER__LOG_EVERY");
  util::MapEnvironment bad({{"HFTRAIN__OPTIMIZR__LR", "1"}, {"HFTRAIN__", "1"}});
  auto err = resolve_error(kMinimal, {}, bad);
  CHECK_THAT(err, Contains("environment HFTRAIN__OPTIMIZR__LR: unknown key `optimizr`") &&
                      Contains("did you mean `optimizer`?"));
  CHECK_THAT(err, Contains("malformed override variable name"));
}

TEST_CASE("split_recipe_args separates the recipe from overrides", "[config][overrides]") {
  auto a = config::split_recipe_args({"r.yaml", "a.b=1", "~c"});
  CHECK(a.recipe == "r.yaml");
  CHECK(a.overrides == std::vector<std::string>{"a.b=1", "~c"});
  CHECK_FALSE(config::split_recipe_args({"a.b=1"}).recipe);
}
