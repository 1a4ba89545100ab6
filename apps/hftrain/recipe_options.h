// The verbs that take `RECIPE [overrides]` (run, config, plan, prepare) turn their arguments into
// resolve options the same way: the recipe (a file or a shipped name) and the a.b=VALUE overrides.
#pragma once

#include <string>
#include <vector>

#include "config/resolve.h"

namespace hftrain::app {

// Throws UsageError naming `verb` with `example` when no RECIPE comes before the overrides, and
// what locate_recipe throws for a recipe that is not found.
config::ResolveOptions recipe_options(const std::vector<std::string>& args, const std::string& verb,
                                      const std::string& example);

}  // namespace hftrain::app
