#include "config/resolve.h"

#include "config/diagnostics.h"
#include "config/interpolate.h"
#include "config/overrides.h"
#include "config/recipe.h"
#include "config/validate.h"
#include "config/yaml_load.h"
#include "util/error.h"

namespace hftrain::config {

namespace {

// Environment and command-line overrides, interpolation and validation. From here on every
// problem is collected and reported together.
void finish(ResolvedConfig& out, const Node& defaults, const std::vector<std::string>& overrides,
            const util::Environment& env, const Schema& schema, bool cross_field = true) {
  Diagnostics diags;
  for (const auto& o : environment_overrides(env, diags)) apply_override(out.tree, o, schema, defaults, diags);
  for (const auto& arg : overrides) {
    if (auto o = parse_override(arg, diags)) apply_override(out.tree, *o, schema, defaults, diags);
  }
  const std::set<std::string> unresolved = interpolate(out.tree, schema, env, diags);
  out.values = validate(out.tree, schema, diags, unresolved, cross_field);
  diags.throw_if_any();
}

}  // namespace

ResolvedConfig resolve_config(const ResolveOptions& options, const Schema& schema) {
  const util::Environment& env = options.env ? *options.env : util::Environment::process();
  const std::vector<std::filesystem::path> dirs =
      options.recipe_dirs.empty() ? shipped_recipe_dirs(env) : options.recipe_dirs;

  ResolvedConfig out;
  const Node defaults = schema.defaults_tree();
  out.tree = defaults;
  if (!options.model_values.empty()) {
    Node layer = Node::map(Origin{Origin::Kind::kModel, options.model_source, 0, 0, {}});
    for (const auto& [key, value] : options.model_values) {
      Node* at = &layer;
      size_t start = 0;
      for (size_t dot = key.find('.'); dot != std::string::npos; start = dot + 1, dot = key.find('.', start)) {
        const std::string part = key.substr(start, dot - start);
        Node* next = at->find(part);
        at = next ? next : &at->set(part, Node::map(layer.origin()));
      }
      // YAML, as an override's value: longrope's factor lists are sequences ("[1,1.5]").
      at->set(key.substr(start), parse_yaml_value(value, layer.origin()));
    }
    out.tree.merge_from(layer);
  }

  // File layers first: a missing or unparsable file stops here, since nothing after it can be trusted.
  if (options.recipe) {
    for (auto& layer : load_recipe_layers(*options.recipe, dirs)) {
      out.tree.merge_from(layer.tree);
      out.files.push_back(layer.path);
    }
  }
  if (options.checkpoint_config) {
    Node ckpt = load_yaml_file(*options.checkpoint_config, Origin::Kind::kCheckpoint);
    if (!ckpt.is_map()) {
      throw util::CheckpointError(options.checkpoint_config->string() + " is not a config mapping",
                                  "the checkpoint is damaged; try an earlier one");
    }
    out.tree.merge_from(ckpt);
  }

  finish(out, defaults, options.overrides, env, schema, !options.skip_cross_field_rules);
  return out;
}

ResolvedConfig resolve_yaml_text(std::string_view text, const std::string& source,
                                 const std::vector<std::string>& overrides, const util::Environment& env,
                                 const Schema& schema) {
  Node recipe = parse_yaml(text, source);
  if (!recipe.is_map() && !recipe.is_null()) {
    throw util::ConfigError(recipe.origin().describe() + ": a recipe is a mapping of sections, not a " +
                            recipe.kind_name());
  }
  if (recipe.is_map() && recipe.find("defaults")) {
    throw util::ConfigError(source + ": `defaults:` needs a recipe file to resolve names against");
  }
  ResolvedConfig out;
  const Node defaults = schema.defaults_tree();
  out.tree = defaults;
  if (recipe.is_map()) out.tree.merge_from(recipe);
  finish(out, defaults, overrides, env, schema);
  return out;
}

}  // namespace hftrain::config
