// The data source lists (Type::kSourceList: data.train, data.validation), converted from the
// config tree: paths, or mappings {path, weight, name, format, text_field, ...}.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/schema.h"

namespace hftrain::config {

// data.format's spelling of a format.
std::string_view data_format_name(DataFormat format);

// The string fields an entry sets besides its path (name, format, the field names, separator), in
// the order they are written: what the YAML, JSON and text forms all write after path and weight.
std::vector<std::pair<std::string, std::string>> data_source_strings(const DataSource& source);

// Reports each bad item or field at its origin and returns nullopt when any is bad.
std::optional<Value> convert_sources(const Schema& schema, const Node& node, const KeySpec& spec, Diagnostics& diags);

}  // namespace hftrain::config
