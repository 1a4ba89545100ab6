// Writing a resolved config (YAML, JSON, with or without each value's origin) and the schema
// (text, markdown for README.md, JSON).
#pragma once

#include <filesystem>
#include <string>

#include "config/resolve.h"
#include "config/schema.h"

namespace hftrain::config {

// YAML that resolve_config reads back to the same values; with `provenance`, each value carries a
// `# origin` comment.
std::string to_yaml(const ResolvedConfig& config, const Schema& schema, bool provenance);
// JSON {section: {key: value}}; with `provenance`, each value becomes {"value": v, "origin": "..."}.
std::string to_json(const ResolvedConfig& config, const Schema& schema, bool provenance);

std::string schema_text(const Schema& schema);
std::string schema_markdown(const Schema& schema);
std::string schema_json(const Schema& schema);

// The text of config.yaml: a header line with hftrain's version, then to_yaml with provenance.
std::string resolved_config_text(const ResolvedConfig& config, const Schema& schema);

// Writes <dir>/config.yaml (with provenance comments) crash-safely, creating `dir` if needed.
void write_resolved_config(const ResolvedConfig& config, const Schema& schema,
                           const std::filesystem::path& dir);

}  // namespace hftrain::config
