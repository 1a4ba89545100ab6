// Cases found by review: each once let a wrong config through silently or failed badly.
#include <catch2/catch.hpp>

#include "config/emit.h"
#include "config/overrides.h"
#include "config/yaml_load.h"
#include "helpers.h"

using namespace hftrain;
using namespace hftrain::test;
using Catch::Matchers::Contains;

TEST_CASE("an empty section keeps its defaults, a map for a section merges", "[config][review]") {
  auto c = resolve("optimizer:\n  # nothing yet\ntrainer: {max_steps: 5}\n").values;
  CHECK(c.optimizer.lr == Approx(3e-4));
  auto merged = resolve("optimizer: {lr: 0.001, weight_decay: 0.1}\ntrainer: {max_steps: 5}\n",
                        {"optimizer={name: sgd}"}).values;
  CHECK(merged.optimizer.name == config::OptimizerName::kSgd);
  CHECK(merged.optimizer.lr == Approx(0.001));
  CHECK(merged.optimizer.weight_decay == Approx(0.1));
  CHECK_THAT(resolve_error(kMinimal, {"checkpoint=null"}), Contains("is a section and cannot be set to null"));
  util::MapEnvironment env({{"HFTRAIN__CHECKPOINT", "{every_steps: 100}"}});
  auto from_env = resolve(kMinimal, {}, env).values;
  CHECK(from_env.checkpoint.every_steps == 100);
  CHECK(from_env.checkpoint.keep_last == 3);
}

TEST_CASE("a dotted key in a file is an error, not ignored", "[config][review]") {
  CHECK_THAT(resolve_error("optimizer.lr: 0.5\ntrainer: {max_steps: 7}\n"),
             Contains("recipe.yaml:1:1: key `optimizer.lr` has a dot in its name") && Contains("optimizer: {lr: ...}"));
}

TEST_CASE("an unclosed quote does not swallow the rest of the file", "[config][review]") {
  CHECK_THAT(resolve_error("run:\n  name: 'my run\noptimizer:\n  lr: 0.5\n"),
             Contains("recipe.yaml:2:9: a quoted string starts here and is never closed"));
  CHECK_THAT(resolve_error("run:\n  name: \"my run\noptimizer:\n  lr: 0.5\n"), Contains("never closed"));
  // Multi-line quoted strings that do close are fine.
  CHECK(resolve("run:\n  name: 'two\n    lines'\ntrainer: {max_steps: 5}\n").values.run.name == "two lines");
}

TEST_CASE("nested YAML aliases cannot blow up memory", "[config][review]") {
  std::string bomb = "x0: &a0 [a, a, a, a, a, a, a, a, a, a]\n";
  for (int i = 1; i < 9; ++i) {
    bomb += "x" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) bomb += (k ? ", *a" : "*a") + std::to_string(i - 1);
    bomb += "]\n";
  }
  CHECK_THAT(resolve_error(bomb), Contains("expands to more than 100000 values"));
}

TEST_CASE("interpolation inside a value keeps its type, env values stay whole", "[config][review]") {
  CHECK(resolve(kMinimal, {"trainer.max_steps=${trainer.log_every}0"}).values.trainer.max_steps == 100);
  util::MapEnvironment env({{"NAME", "my run #1"}, {"LIST", "- a"}, {"LR", "2e-3"}});
  auto c =
      resolve(kMinimal, {"run.name=${env:NAME}", "run.output_dir=${env:LIST}", "optimizer.lr=${env:LR}"}, env).values;
  CHECK(c.run.name == "my run #1");
  CHECK(c.run.output_dir == "- a");
  CHECK(c.optimizer.lr == Approx(2e-3));
}

TEST_CASE("strings with ${ or control characters round-trip through the written config", "[config][review]") {
  const auto& schema = config::product_schema();
  auto first = resolve(kMinimal, {"run.name='cost \\${x}'", "run.output_dir=\"a\\rb\""});
  CHECK(first.values.run.name == "cost ${x}");
  CHECK(first.values.run.output_dir == "a\rb");
  auto again = resolve(config::to_yaml(first, schema, true));
  CHECK(again.values.run.name == "cost ${x}");
  CHECK(again.values.run.output_dir == "a\rb");
}

TEST_CASE("more malformed input found by review", "[config][review]") {
  CHECK_THAT(resolve_error(kMinimal, {"trainer.max_steps=,5"}), Contains("cannot parse the value `,5`"));
  CHECK_THROWS_WITH(config::parse_yaml("a: 1\n...\nb: 2\n", "r.yaml"), Contains("second YAML document"));
  CHECK_THROWS_WITH(config::parse_yaml("a: 1\n\t# yaml-cpp rejects this\n", "r.yaml"),
                    Contains("r.yaml:2: tab character"));
  CHECK_THAT(resolve_error(kMinimal, {"optimizer.lr=1e-400"}), Contains("too small for a float"));
  auto split = config::split_recipe_args({"runs/lr=1e-3/config.yaml", "a=1"});
  CHECK(split.recipe == "runs/lr=1e-3/config.yaml");
  util::MapEnvironment env({{"HFTRAIN__RUN__TAGS__TEAM", "nlp"}});
  CHECK(resolve(kMinimal, {}, env).values.run.tags.at("team") == "nlp");
}

TEST_CASE("config: QLoRA quantizes decoders' bases only, and needs LoRA", "[config][peft]") {
  CHECK_THAT(resolve_error(kMinimal, {"model.arch=bert", "peft.method=lora", "peft.quantize_base=nf4"}),
             Contains("a BERT classifier's base is not quantized"));
  CHECK_THAT(resolve_error(kMinimal, {"peft.quantize_base=int8"}), Contains("peft.method is not lora"));
  CHECK(resolve(kMinimal, {"model.arch=bert", "peft.method=lora"}).values.peft.method == config::PeftMethod::kLora);
}
