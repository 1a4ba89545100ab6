// ${...} interpolation, resolved after all merging and overrides:
//   ${model.d_model}          the value of another key (a whole-value reference keeps its type)
//   ${env:VAR}                an environment variable; an error when it is unset
//   ${env:VAR,default}        ... or `default` when it is unset
//   \${                       a literal "${"
#pragma once

#include <set>
#include <string>

#include "config/diagnostics.h"
#include "config/node.h"
#include "config/schema.h"
#include "util/env.h"

namespace hftrain::config {

// Replaces every interpolation in `root` in place. Missing keys, unset variables, malformed
// references and reference cycles are reported to `diags` (cycles show the whole loop). Returns
// the dotted keys that could not be resolved, so validation does not report them a second time.
std::set<std::string> interpolate(Node& root, const Schema& schema, const util::Environment& env,
                                  Diagnostics& diags);

}  // namespace hftrain::config
