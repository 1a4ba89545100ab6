// The validator, separate from the parser: resolved tree -> typed Config, reporting unknown keys,
// wrong types, out-of-range or disallowed values and cross-field rule violations all at once.
#pragma once

#include <set>
#include <string>

#include "config/config.h"
#include "config/diagnostics.h"
#include "config/node.h"
#include "config/schema.h"

namespace hftrain::config {

// `unresolved` lists keys whose interpolation failed (already reported); they are not converted.
// `cross_field`: also check_cross_field_rules (off for a first pass whose values are not final).
Config validate(const Node& tree, const Schema& schema, Diagnostics& diags,
                const std::set<std::string>& unresolved = {}, bool cross_field = true);

// Rules that involve more than one key (rules.cpp). Run only when every key converted cleanly.
void check_cross_field_rules(const Config& config, const Node& tree, Diagnostics& diags);

}  // namespace hftrain::config
