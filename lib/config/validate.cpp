#include "config/validate.h"

#include "config/overrides.h"

namespace hftrain::config {
namespace {

void find_unknown_keys(const Node& node, const KeyPath& path, const Schema& schema, Diagnostics& diags) {
  for (const auto& [key, child] : node.entries()) {
    KeyPath sub = path;
    sub.push_back(key);
    if (key.find('.') != std::string::npos) {
      // `optimizer.lr: 3` in a file is one key with a dot in its name, not optimizer -> lr.
      diags.add(child.key_origin().describe(), "key `" + key + "` has a dot in its name",
                "nest it instead: " + key.substr(0, key.find('.')) + ": {" + key.substr(key.find('.') + 1) + ": ...}");
      continue;
    }
    if (schema.find(sub)) continue;
    if (schema.is_section(sub)) {
      if (child.is_map()) {
        find_unknown_keys(child, sub, schema, diags);
      } else if (!child.is_null()) {
        diags.add(child.origin().describe(),
                  "`" + to_string(sub) + "` is a section and takes keys, not a " + child.kind_name(),
                  "write it as a mapping, e.g. " + to_string(sub) + ": {" +
                      [&] {
                        for (const auto& k : schema.keys())
                          if (k.segments.size() > sub.size() &&
                              std::equal(sub.begin(), sub.end(), k.segments.begin()))
                            return k.segments[sub.size()];
                        return std::string("key");
                      }() + ": ...}");
      }
      continue;
    }
    report_unknown_key(sub, child.key_origin(), schema, diags);
  }
}

}  // namespace

Config validate(const Node& tree, const Schema& schema, Diagnostics& diags,
                const std::set<std::string>& unresolved, bool cross_field) {
  Config config;
  const size_t before = diags.size();
  find_unknown_keys(tree, {}, schema, diags);
  for (const auto& spec : schema.keys()) {
    const Node* node = tree.find_path(spec.segments);
    // A missing node means its section was replaced by a scalar, reported above.
    if (!node || unresolved.count(spec.path)) continue;
    if (auto value = schema.convert(*node, spec, diags)) spec.assign(config, *value, spec);
  }
  if (cross_field && diags.size() == before && unresolved.empty()) check_cross_field_rules(config, tree, diags);
  return config;
}

}  // namespace hftrain::config
