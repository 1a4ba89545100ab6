// Command-line overrides (`a.b=VALUE`, `~a.b`, `+a.b=VALUE`) and environment overrides
// (HFTRAIN__SECTION__KEY=VALUE), applied to the merged tree.
#pragma once

#include <optional>
#include <string>

#include "config/diagnostics.h"
#include "config/node.h"
#include "config/schema.h"
#include "util/env.h"

namespace hftrain::config {

struct Override {
  enum class Op { kSet, kAdd, kRemove };
  Op op = Op::kSet;
  KeyPath path;
  std::string value;  // YAML text; empty for kRemove
  Origin origin;      // command line `arg`, or environment NAME
};

// True when `arg` is meant as an override rather than a file or flag: it contains '=' or starts
// with '~' or '+'.
bool looks_like_override(const std::string& arg);

// A verb's positional arguments: the recipe (the first one, unless it is an override) and the
// overrides after it.
struct RecipeArgs {
  std::optional<std::string> recipe;
  std::vector<std::string> overrides;
};
RecipeArgs split_recipe_args(const std::vector<std::string>& args);

// Parses one `a.b=V`, `~a.b` or `+a.b=V`. Malformed ones are reported and give nullopt.
std::optional<Override> parse_override(const std::string& arg, Diagnostics& diags);

// The prefix of environment overrides: HFTRAIN__OPTIMIZER__LR=3e-4 sets optimizer.lr.
inline constexpr const char* kEnvOverridePrefix = "HFTRAIN__";
std::vector<Override> environment_overrides(const util::Environment& env, Diagnostics& diags);

// Applies an override. `defaults` is the schema's default tree, used by `~` to fall back.
void apply_override(Node& tree, const Override& o, const Schema& schema, const Node& defaults,
                    Diagnostics& diags);

// "unknown key `x`" with did-you-mean suggestions drawn from the schema.
void report_unknown_key(const KeyPath& path, const Origin& origin, const Schema& schema,
                        Diagnostics& diags);

}  // namespace hftrain::config
