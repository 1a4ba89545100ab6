// `hftrain config RECIPE [overrides] [--provenance] [--json]` and `hftrain config --schema`.
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>

#include "commands.h"
#include "recipe_options.h"
#include "config/emit.h"
#include "config/overrides.h"
#include "config/recipe.h"
#include "config/resolve.h"
#include "train/build/model_from.h"
#include "util/error.h"

namespace hftrain::app {
namespace {

struct ConfigArgs {
  std::vector<std::string> args;
  bool provenance = false;
  bool json = false;
  bool schema = false;
  bool markdown = false;
};

int run_config(const ConfigArgs& a) {
  const config::Schema& schema = config::product_schema();
  if (a.schema) {
    std::cout << (a.json ? config::schema_json(schema)
                         : a.markdown ? config::schema_markdown(schema) : config::schema_text(schema));
    return util::kExitOk;
  }
  config::ResolveOptions options =
      recipe_options(a.args, "config", "hftrain config recipes/quickstart.yaml optimizer.lr=1e-3");
  const config::ResolvedConfig resolved = train::resolve_with_model_from(options, schema);
  std::cout << (a.json ? config::to_json(resolved, schema, a.provenance)
                       : config::to_yaml(resolved, schema, a.provenance));
  return util::kExitOk;
}

}  // namespace

void add_config_command(CLI::App& app, Runner& runner) {
  auto a = std::make_shared<ConfigArgs>();
  CLI::App* sub = app.add_subcommand(
      "config", "Print the resolved config of a recipe plus overrides, or the schema of every key");
  sub->add_option("args", a->args,
                  "RECIPE (a file or a shipped recipe name), then overrides: a.b=VALUE, ~a.b, +a.b=VALUE");
  sub->add_flag("--provenance", a->provenance, "Show where each value came from");
  sub->add_flag("--json", a->json, "Print JSON instead of YAML");
  auto* schema = sub->add_flag("--schema", a->schema, "Print every key with its type, default and doc");
  sub->add_flag("--markdown", a->markdown, "With --schema: print the README's config reference")
      ->needs(schema);
  sub->callback([a, &runner] { runner = [a] { return run_config(*a); }; });
}

}  // namespace hftrain::app
