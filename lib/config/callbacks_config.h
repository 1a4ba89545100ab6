// The user callbacks list (Type::kCallbackList: `callbacks:`), converted from the config tree:
// mappings {plugin: PATH, args: {...}, ranks: main|all} and {command: TEXT, on: [...], background,
// required}, each item's problems reported at the item or field they concern.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/schema.h"

namespace hftrain::config {

// Reports each bad item or field at its origin and returns nullopt when any is bad.
std::optional<Value> convert_callbacks(const Schema& schema, const Node& node, const KeySpec& spec,
                                       Diagnostics& diags);

// An entry's fields as written (YAML, JSON and text forms): plugin or command first, then the rest
// that differ from their defaults. Values are YAML scalars or flow collections.
std::vector<std::pair<std::string, std::string>> callback_fields(const CallbackSpec& callback);
// The text of one entry: a flow mapping of callback_fields.
std::string callback_text(const CallbackSpec& callback);

}  // namespace hftrain::config
