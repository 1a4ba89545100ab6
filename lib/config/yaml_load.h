// YAML text -> config Node, with the strictness recipes need: valid UTF-8, no tabs in
// indentation, no duplicate keys, scalar keys only, bounded nesting, one document.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "config/node.h"

namespace hftrain::config {

inline constexpr int kMaxNestingDepth = 64;

// Parses `text`; `source` names it in messages and origins. Throws ConfigError naming
// source:line:column. An empty document gives a null node.
Node parse_yaml(std::string_view text, const std::string& source,
                Origin::Kind kind = Origin::Kind::kFile);

// Reads and parses a file (see util::read_file for the file-level errors).
Node load_yaml_file(const std::filesystem::path& path, Origin::Kind kind = Origin::Kind::kFile);

// Parses the VALUE of a command-line or environment override as a YAML flow value
// ("3", "[1, 2]", "'quoted'", "{a: 1}") with every node given `origin`.
Node parse_yaml_value(std::string_view text, const Origin& origin);

}  // namespace hftrain::config
