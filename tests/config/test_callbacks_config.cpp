// `callbacks:` entries: plugins {plugin, args, ranks} and commands {command, on, background,
// required}; their errors named at their line; writing them back (YAML and JSON).
#include <catch2/catch.hpp>

#include "config/emit.h"
#include "helpers.h"

using namespace hftrain;
using namespace hftrain::test;
using Catch::Matchers::Contains;

namespace {
const char* kCallbacks =
    "trainer: {max_steps: 10}\n"
    "callbacks:\n"
    "  - plugin: build/examples/libstop_at_loss.so\n"
    "    args: {target: '2.5', csv: 'evals: all.csv'}\n"
    "  - {command: 'cp -r \"$HFTRAIN_CHECKPOINT\" backup/', on: [save]}\n"
    "  - {command: 'curl -s https://example.org/notify?step=$HFTRAIN_STEP', background: false, required: true}\n"
    "  - {plugin: ./libmine.so, ranks: all}\n";
}

TEST_CASE("callbacks: plugins and commands with their fields and defaults", "[config][callbacks]") {
  const auto c = resolve(kCallbacks).values;
  REQUIRE(c.callbacks.size() == 4);
  CHECK(c.callbacks[0].plugin == "build/examples/libstop_at_loss.so");
  CHECK(c.callbacks[0].args.at("target") == "2.5");
  CHECK(c.callbacks[0].args.at("csv") == "evals: all.csv");
  CHECK_FALSE(c.callbacks[0].all_ranks);
  CHECK(c.callbacks[1].command == "cp -r \"$HFTRAIN_CHECKPOINT\" backup/");
  CHECK(c.callbacks[1].on == std::vector<std::string>{"save"});
  CHECK(c.callbacks[1].background);
  CHECK_FALSE(c.callbacks[1].required);
  // a command without `on` runs on evaluations, saves and the end
  CHECK(c.callbacks[2].on == std::vector<std::string>{"evaluate", "save", "end"});
  CHECK_FALSE(c.callbacks[2].background);
  CHECK(c.callbacks[2].required);
  CHECK(c.callbacks[3].all_ranks);
  CHECK(resolve(kMinimal).values.callbacks.empty());
  // from the command line, as YAML flow
  const auto o = resolve(kMinimal, {"callbacks=[{command: 'echo $HFTRAIN_EVENT', on: [begin, end]}]"}).values;
  REQUIRE(o.callbacks.size() == 1);
  CHECK(o.callbacks[0].on == std::vector<std::string>{"begin", "end"});
}

TEST_CASE("callbacks: the written config reads back the same", "[config][callbacks]") {
  const auto& schema = config::product_schema();
  const auto first = resolve(kCallbacks);
  const std::string yaml = config::to_yaml(first, schema, false);
  const auto second = resolve(yaml);
  CHECK(second.values.callbacks == first.values.callbacks);
  CHECK(config::to_yaml(second, schema, false) == yaml);
  CHECK(resolve(config::to_yaml(first, schema, true)).values.callbacks == first.values.callbacks);
  const std::string json = config::to_json(first, schema, false);
  CHECK_THAT(json, Contains("\"plugin\": \"build/examples/libstop_at_loss.so\""));
  CHECK_THAT(json, Contains("\"required\": true"));
}

TEST_CASE("callbacks: bad entries are named with their line", "[config][callbacks]") {
  const std::string unknown = resolve_error("trainer: {max_steps: 1}\ncallbacks:\n  - {plugin: a.so, argz: {}}\n");
  CHECK_THAT(unknown, Contains("recipe.yaml:3"));
  CHECK_THAT(unknown, Contains("`callbacks` item 1.argz` is not a field of a callback"));
  CHECK_THAT(unknown, Contains("did you mean `args`?"));
  CHECK_THAT(resolve_error("trainer: {max_steps: 1}\ncallbacks: [{plugin: a.so, command: ls}]\n"),
             Contains("has both a `plugin` and a `command`"));
  CHECK_THAT(resolve_error("trainer: {max_steps: 1}\ncallbacks: [{args: {a: b}}]\n"),
             Contains("has neither a `plugin` nor a `command`"));
  CHECK_THAT(resolve_error("trainer: {max_steps: 1}\ncallbacks: [{command: ls, on: [save, step]}]\n"),
             Contains("has `step`, which is not an event"));
  CHECK_THAT(resolve_error("trainer: {max_steps: 1}\ncallbacks: [{plugin: a.so, on: [save]}]\n"),
             Contains("is a plugin, and `on`, `background` and `required` are a command's fields"));
  CHECK_THAT(resolve_error("trainer: {max_steps: 1}\ncallbacks: [{command: ls, ranks: all}]\n"),
             Contains("is a command, and `args` and `ranks` are a plugin's fields"));
  CHECK_THAT(resolve_error("trainer: {max_steps: 1}\ncallbacks: [{plugin: a.so, ranks: some}]\n"),
             Contains("allowed: main, all"));
  CHECK_THAT(resolve_error("trainer: {max_steps: 1}\ncallbacks: [ls]\n"),
             Contains("must be a mapping with a `plugin` or a `command`"));
  CHECK_THAT(resolve_error("trainer: {max_steps: 1}\ncallbacks: {command: ls, background: maybe}\n"),
             Contains("background"));
}
