// Recipe files: finding shipped recipes by name and loading a recipe with the `defaults:` files
// it names, in merge order.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "config/node.h"
#include "util/env.h"

namespace hftrain::config {

struct RecipeLayer {
  std::filesystem::path path;
  Node tree;  // the file's mapping, without its `defaults:` key
};

// Where shipped recipes live, first match wins: $HFTRAIN_RECIPES_DIR, <exe>/../share/hftrain/recipes,
// then the recipes/ folder of the source tree this binary was built from.
std::vector<std::filesystem::path> shipped_recipe_dirs(const util::Environment& env);

// The shipped recipe called `name` ("quickstart" or "quickstart.yaml"), if any.
std::optional<std::filesystem::path> find_shipped_recipe(const std::string& name,
                                                         const std::vector<std::filesystem::path>& dirs);
// Names of all shipped recipes, sorted, without ".yaml".
std::vector<std::string> list_shipped_recipes(const std::vector<std::filesystem::path>& dirs);

// A recipe argument: an existing file, else a shipped recipe name. Throws ConfigError otherwise.
std::filesystem::path locate_recipe(const std::string& arg, const std::vector<std::filesystem::path>& dirs);

// Loads `recipe` and, depth first, every file its `defaults:` lists (relative to the naming file,
// or shipped recipes by name). Layers come in merge order, the recipe itself last. Cycles and
// missing files are ConfigErrors that show the chain.
std::vector<RecipeLayer> load_recipe_layers(const std::filesystem::path& recipe,
                                            const std::vector<std::filesystem::path>& dirs);

}  // namespace hftrain::config
