// The data source lists (Type::kSourceList: data.train, data.validation), converted from the
// config tree: paths, or mappings {path, weight, name, format, text_field, ...}.
#pragma once

#include <optional>
#include <string_view>

#include "config/schema.h"

namespace hftrain::config {

// data.format's spelling of a format.
std::string_view data_format_name(DataFormat format);

// Reports each bad item or field at its origin and returns nullopt when any is bad.
std::optional<Value> convert_sources(const Schema& schema, const Node& node, const KeySpec& spec, Diagnostics& diags);

}  // namespace hftrain::config
