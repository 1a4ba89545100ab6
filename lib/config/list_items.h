// What the list-of-mappings config types share (data sources, callbacks): a list whose items each
// convert on their own, every bad item reported at its origin before the list is refused.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/schema.h"

namespace hftrain::config {

// `convert(item_node, where, out)` fills one item and returns false (having reported why) when it
// cannot be used; `where` names the item ("`data.train` item 2"). A null node is the empty list;
// a node for which `single(node)` holds is a list of one.
template <class Item, class Single, class Convert>
std::optional<Value> convert_list(const Node& node, const std::string& key, Single single, Convert convert) {
  std::vector<Item> out;
  if (node.is_null()) return Value{std::move(out)};
  if (single(node)) {
    Item one;
    if (!convert(node, key, one)) return std::nullopt;
    out.push_back(std::move(one));
    return Value{std::move(out)};
  }
  bool ok = true;
  for (size_t i = 0; i < node.items().size(); ++i) {
    Item entry;
    if (convert(node.items()[i], key + " item " + std::to_string(i + 1), entry)) {
      out.push_back(std::move(entry));
    } else {
      ok = false;
    }
  }
  if (!ok) return std::nullopt;
  return Value{std::move(out)};
}

}  // namespace hftrain::config
