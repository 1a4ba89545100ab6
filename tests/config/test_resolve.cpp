#include <catch2/catch.hpp>

#include "config/recipe.h"
#include "helpers.h"

using namespace hftrain;
using namespace hftrain::test;
using Catch::Matchers::Contains;

namespace {
config::ResolvedConfig resolve_file(const std::filesystem::path& recipe, std::vector<std::string> overrides = {},
                                    std::vector<std::filesystem::path> dirs = {"/nonexistent"},
                                    std::optional<std::filesystem::path> checkpoint = std::nullopt) {
  static const util::MapEnvironment env;
  config::ResolveOptions o;
  o.recipe = recipe;
  o.overrides = std::move(overrides);
  o.env = &env;
  o.recipe_dirs = std::move(dirs);
  o.checkpoint_config = std::move(checkpoint);
  return config::resolve_config(o);
}
std::string resolve_file_error(const std::filesystem::path& recipe,
                               std::vector<std::filesystem::path> dirs = {"/nonexistent"}) {
  try {
    resolve_file(recipe, {}, std::move(dirs));
  } catch (const util::ConfigError& e) {
    return e.what();
  }
  FAIL("expected a ConfigError");
  return {};
}
}  // namespace

TEST_CASE("defaults: files merge in order, the recipe last", "[config][resolve]") {
  TempDir d;
  d.write("base.yaml", "trainer: {max_steps: 10, log_every: 5}\nmodel: {n_layer: 2}\n");
  d.write("sub/more.yaml", "model: {n_layer: 3, n_head: 2, d_model: 64}\n");
  auto recipe = d.write("r.yaml", "defaults: [base.yaml, sub/more]\nmodel: {n_head: 4}\n");
  auto r = resolve_file(recipe);
  CHECK(r.values.trainer.max_steps == 10);
  CHECK(r.values.model.n_layer == 3);  // more.yaml over base.yaml
  CHECK(r.values.model.n_head == 4);   // the recipe over both
  CHECK(r.values.model.d_model == 64);
  REQUIRE(r.files.size() == 3);
  CHECK(r.files.back() == recipe);
  CHECK_THAT(r.tree.find_path({"model", "n_layer"})->origin().describe(), Contains("more.yaml:1:18"));
}

TEST_CASE("defaults: shipped recipes by name", "[config][resolve]") {
  TempDir shipped;
  shipped.write("tiny.yaml", "# a tiny one\ntrainer: {max_steps: 7}\n");
  TempDir d;
  auto recipe = d.write("r.yaml", "defaults: [tiny]\n");
  CHECK(resolve_file(recipe, {}, {shipped.path()}).values.trainer.max_steps == 7);
  CHECK(config::list_shipped_recipes({shipped.path()}) == std::vector<std::string>{"tiny"});
  CHECK(config::locate_recipe("tiny", {shipped.path()}) == shipped.path() / "tiny.yaml");
  CHECK_THROWS_WITH(config::locate_recipe("tinny", {shipped.path()}), Contains("not found"));
}

TEST_CASE("defaults: cycles show the chain, missing entries name the line", "[config][resolve]") {
  TempDir d;
  d.write("a.yaml", "defaults: [b.yaml]\n");
  d.write("b.yaml", "defaults: [a.yaml]\n");
  CHECK_THAT(resolve_file_error(d.path() / "a.yaml"),
             Contains("cycle:") && Contains("a.yaml -> ") && Contains("b.yaml -> ") && Contains("a.yaml"));
  auto self = d.write("self.yaml", "defaults: [self]\n");
  CHECK_THAT(resolve_file_error(self), Contains("cycle"));
  auto missing = d.write("m.yaml", "trainer: {max_steps: 1}\ndefaults:\n  - nowhere\n");
  CHECK_THAT(resolve_file_error(missing), Contains("m.yaml:3:5: defaults entry `nowhere` not found"));
}

TEST_CASE("recipe files that are not recipes", "[config][resolve]") {
  TempDir d;
  CHECK_THAT(resolve_file_error(d.write("empty.yaml", "")), Contains("is empty"));
  CHECK_THAT(resolve_file_error(d.write("list.yaml", "- 1\n- 2\n")), Contains("not a list"));
  CHECK_THAT(resolve_file_error(d.write("scalar.yaml", "hello\n")), Contains("not a scalar"));
  CHECK_THAT(resolve_file_error(d.path()), Contains("is a directory"));
  CHECK_THAT(resolve_file_error(d.path() / "none.yaml"), Contains("does not exist"));
}

TEST_CASE("precedence: defaults < files < recipe < checkpoint < environment < command line", "[config][resolve]") {
  TempDir d;
  d.write("base.yaml",
          "trainer: {max_steps: 1, log_every: 1, eval_every: 0}\noptimizer: {lr: 0.1, weight_decay: 0.1}\n");
  auto recipe =
      d.write("r.yaml", "defaults: [base]\ntrainer: {log_every: 2}\noptimizer: {lr: 0.2, weight_decay: 0.2}\n");
  auto ckpt = d.write("ckpt.yaml", "optimizer: {lr: 0.3, weight_decay: 0.3}\n");
  util::MapEnvironment env({{"HFTRAIN__OPTIMIZER__LR", "0.4"}});
  config::ResolveOptions o;
  o.recipe = recipe;
  o.checkpoint_config = ckpt;
  o.env = &env;
  o.recipe_dirs = {"/nonexistent"};
  o.overrides = {"trainer.eval_every=0"};
  auto r = config::resolve_config(o);
  CHECK(r.values.trainer.max_steps == 1);                 // defaults: file
  CHECK(r.values.trainer.log_every == 2);                 // recipe
  CHECK(r.values.optimizer.weight_decay == Approx(0.3));  // checkpoint
  CHECK(r.values.optimizer.lr == Approx(0.4));            // environment
  CHECK(r.values.model.n_layer == 12);                    // schema default
  auto origin = [&](config::KeyPath p) { return r.tree.find_path(p)->origin().describe(); };
  CHECK_THAT(origin({"trainer", "max_steps"}), Contains("base.yaml:1:22"));
  CHECK_THAT(origin({"optimizer", "weight_decay"}), Contains("checkpoint ") && Contains("ckpt.yaml:1:36"));
  CHECK(origin({"optimizer", "lr"}) == "environment HFTRAIN__OPTIMIZER__LR");
  CHECK(origin({"trainer", "eval_every"}) == "command line `trainer.eval_every=0`");
  CHECK(origin({"model", "n_layer"}) == "default");
}

TEST_CASE("cross-field rules", "[config][resolve]") {
  CHECK_THAT(resolve_error("model: {n_layer: 2}\n"),
             Contains("none of `trainer.max_steps`, `trainer.max_epochs` or `trainer.max_tokens` is set"));
  CHECK_NOTHROW(resolve("trainer: {max_epochs: 3}\n"));
  CHECK_THAT(resolve_error("trainer: {max_steps: 100}\nscheduler: {warmup_steps: 100}\n"),
             Contains("must be shorter than training"));
  CHECK_THAT(resolve_error(std::string(kMinimal) + "checkpoint: {keep_best: true}\ndata: {validation: v.txt}\n"),
             Contains("`checkpoint.keep_best` needs evaluation, but `trainer.eval_every` is 0"));
  CHECK_THAT(
      resolve_error(std::string(kMinimal) + "checkpoint: {keep_best: true}\ndata: {validation: v.txt}\n",
                    {"trainer.eval_every=10", "trainer.load_best_model_at_end=true", "checkpoint.keep_best=false"}),
      Contains("which only `checkpoint.keep_best` saves and keeps"));
  CHECK_THAT(resolve_error(std::string(kMinimal), {"trainer.eval_on_start=true"}),
             Contains("`trainer.eval_on_start` evaluates, but `data.validation` is empty"));
  CHECK_THAT(
      resolve_error(std::string(kMinimal) + "data: {validation: v.txt}\n", {"trainer.early_stopping_patience=2"}),
      Contains("`trainer.early_stopping_patience` needs evaluation"));
  CHECK_NOTHROW(resolve(std::string(kMinimal) + "data: {validation: v.txt}\n",
                        {"trainer.early_stopping_patience=2", "trainer.eval_on_epoch_end=true"}));
  CHECK_THAT(resolve_error(std::string(kMinimal), {"model.d_model=100", "model.n_head=3"}),
             Contains("not divisible by `model.n_head`"));
  CHECK_THAT(resolve_error(std::string(kMinimal), {"data.seq_len=2048"}), Contains("exceeds `model.max_seq_len`"));
  CHECK_THAT(resolve_error(std::string(kMinimal), {"tokenizer.type=bpe"}), Contains("needs `tokenizer.path`"));
}

TEST_CASE("all problems are reported at once", "[config][resolve]") {
  auto err = resolve_error("trainer: {max_steps: x, precision: fp8}\noptimizer: {lrr: 1}\n", {"model.n_layer=0"});
  CHECK_THAT(err, Contains("4 problems"));
}

TEST_CASE("the shipped recipes resolve", "[config][resolve]") {
  const std::filesystem::path dir = std::filesystem::path(HFTRAIN_SOURCE_DIR) / "recipes";
  auto names = config::list_shipped_recipes({dir});
  REQUIRE_FALSE(names.empty());
  // The fine-tuning recipes name their model directory through this variable (or model.from=DIR).
  const util::MapEnvironment env({{"HFTRAIN_MODEL_DIR", "/models/some-model"}});
  for (const auto& name : names) {
    INFO(name);
    config::ResolveOptions o;
    o.recipe = dir / (name + ".yaml");
    o.env = &env;
    o.recipe_dirs = {dir};
    CHECK_NOTHROW(config::resolve_config(o));
  }
}

TEST_CASE("model.from values sit above the defaults and below everything written", "[config][resolve]") {
  TempDir d;
  auto recipe = d.write("r.yaml", "trainer: {max_steps: 5}\nmodel: {n_head: 8}\n");
  static const util::MapEnvironment env;
  config::ResolveOptions o;
  o.recipe = recipe;
  o.env = &env;
  o.recipe_dirs = {"/nonexistent"};
  o.overrides = {"model.d_model=96"};
  o.model_values = {{"model.n_layer", "3"}, {"model.n_head", "4"}, {"model.d_model", "64"},
                    {"model.rope_scaling.type", "linear"}, {"tokenizer.type", "hf"},
                    {"tokenizer.path", "models/tiny/tokenizer.json"}};
  o.model_source = "models/tiny/config.json";
  auto r = config::resolve_config(o);
  CHECK(r.values.model.n_layer == 3);   // from the model directory
  CHECK(r.values.model.n_head == 8);    // the recipe wins
  CHECK(r.values.model.d_model == 96);  // and the command line
  auto origin = [&](config::KeyPath p) { return r.tree.find_path(p)->origin().describe(); };
  CHECK(origin({"model", "n_layer"}) == "model.from models/tiny/config.json");
  CHECK(origin({"model", "rope_scaling", "type"}) == "model.from models/tiny/config.json");
  CHECK(origin({"tokenizer", "type"}) == "model.from models/tiny/config.json");
  CHECK_THAT(origin({"model", "n_head"}), Contains("r.yaml"));
}
