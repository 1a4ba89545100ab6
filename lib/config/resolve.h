// The config graph: schema defaults < the model directory's values (model.from) < `defaults:` files
// < recipe < checkpoint config (resume) < environment (HFTRAIN__SECTION__KEY) < command line, then
// ${...} interpolation, then validation.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/node.h"
#include "config/schema.h"
#include "util/env.h"

namespace hftrain::config {

struct ResolveOptions {
  // The recipe file (already located; see locate_recipe). May be absent on resume.
  std::optional<std::filesystem::path> recipe;
  // A checkpoint's config.yaml, merged above the recipe on resume.
  std::optional<std::filesystem::path> checkpoint_config;
  // Command-line overrides, in order: a.b=V, ~a.b, +a.b=V.
  std::vector<std::string> overrides;
  // The environment; the process environment when null.
  const util::Environment* env = nullptr;
  // Where shipped recipes are found; shipped_recipe_dirs(env) when empty.
  std::vector<std::filesystem::path> recipe_dirs;
  // Values read from the model directory model.from names (its model.* shape, its tokenizer):
  // above the schema defaults, below everything written, so a recipe need not repeat them and a
  // value that is written anyway wins (and start-up then reports a shape that does not fit).
  // `model_source` names the file they came from. Each value is YAML, as an override's.
  std::vector<std::pair<std::string, std::string>> model_values;
  std::string model_source;
  // Skip the rules that relate keys to each other: a first pass that only reads model.from, whose
  // directory may still change the values those rules compare.
  bool skip_cross_field_rules = false;
};

struct ResolvedConfig {
  Config values;                            // typed and validated
  Node tree = Node::null(Origin{});         // every key, each with its origin
  std::vector<std::filesystem::path> files;  // recipe files merged, in order
};

// Throws ConfigError listing every problem found.
ResolvedConfig resolve_config(const ResolveOptions& options, const Schema& schema = product_schema());

// The same for recipe text held in memory (tests, fuzzing); `source` names it in messages.
// `defaults:` is not allowed here since there is no file to resolve it against.
ResolvedConfig resolve_yaml_text(std::string_view text, const std::string& source,
                                 const std::vector<std::string>& overrides, const util::Environment& env,
                                 const Schema& schema = product_schema());

}  // namespace hftrain::config
