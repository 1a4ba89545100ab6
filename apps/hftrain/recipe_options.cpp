#include "recipe_options.h"

#include "config/overrides.h"
#include "config/recipe.h"
#include "util/env.h"
#include "util/error.h"

namespace hftrain::app {

config::ResolveOptions recipe_options(const std::vector<std::string>& args, const std::string& verb,
                                      const std::string& example) {
  config::RecipeArgs split = config::split_recipe_args(args);
  if (!split.recipe) {
    throw util::UsageError("`hftrain " + verb + "` needs a RECIPE before the overrides", example);
  }
  config::ResolveOptions options;
  options.recipe_dirs = config::shipped_recipe_dirs(util::Environment::process());
  options.recipe = config::locate_recipe(*split.recipe, options.recipe_dirs);
  options.overrides = split.overrides;
  return options;
}

}  // namespace hftrain::app
