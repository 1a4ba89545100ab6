#include "config/callbacks_config.h"

#include <algorithm>

#include "config/list_items.h"
#include "util/strings.h"

namespace hftrain::config {
namespace {

std::string quote(const std::string& s) { return "`" + s + "`"; }

const std::vector<std::string> kFields = {"plugin", "args", "ranks", "command", "on", "background", "required"};
const std::vector<std::string> kPluginFields = {"plugin", "args", "ranks"};
const std::vector<std::string> kCommandFields = {"command", "on", "background", "required"};

bool convert_item(const Schema& schema, const Node& item, const std::string& where_key, CallbackSpec& out,
                  Diagnostics& diags) {
  if (!item.is_map()) {
    diags.add(item.origin().describe(), where_key + " must be a mapping with a `plugin` or a `command`, not a " +
                                            item.kind_name(),
              "e.g. {plugin: path/libmine.so, args: {target: '2.5'}} or {command: 'cp -r $HFTRAIN_CHECKPOINT "
              "backup/', on: [save]}");
    return false;
  }
  bool ok = true;
  auto convert = [&](const std::string& field, const Node& v, Type type,
                     std::vector<std::string> choices = {}) -> std::optional<Value> {
    KeySpec spec;
    spec.path = where_key + "." + field;
    spec.type = type;
    spec.choices = std::move(choices);
    auto value = schema.convert(v, spec, diags);
    if (!value) ok = false;
    return value;
  };
  bool has_plugin_field = false, has_command_field = false;
  for (const auto& [field, v] : item.entries()) {
    if (v.is_null()) continue;
    has_plugin_field =
        has_plugin_field || (field != "plugin" && std::count(kPluginFields.begin(), kPluginFields.end(), field));
    has_command_field =
        has_command_field || (field != "command" && std::count(kCommandFields.begin(), kCommandFields.end(), field));
    if (field == "plugin" || field == "command") {
      if (auto t = convert(field, v, Type::kString))
        (field == "plugin" ? out.plugin : out.command) = std::get<std::string>(*t);
    } else if (field == "args") {
      if (auto m = convert(field, v, Type::kStringMap)) out.args = std::get<std::map<std::string, std::string>>(*m);
    } else if (field == "ranks") {
      if (auto r = convert(field, v, Type::kChoice, {"main", "all"}))
        out.all_ranks = std::get<std::string>(*r) == "all";
    } else if (field == "on") {
      auto list = convert(field, v, Type::kStringList);
      if (!list) continue;
      for (const auto& event : std::get<std::vector<std::string>>(*list)) {
        if (std::find(kCallbackEvents.begin(), kCallbackEvents.end(), event) == kCallbackEvents.end()) {
          diags.add(v.origin().describe(), quote(where_key + ".on") + " has `" + event + "`, which is not an event",
                    "events: " + util::join(kCallbackEvents, ", "));
          ok = false;
        }
      }
      out.on = std::get<std::vector<std::string>>(*list);
    } else if (field == "background" || field == "required") {
      if (auto b = convert(field, v, Type::kBool))
        (field == "background" ? out.background : out.required) = std::get<bool>(*b);
    } else {
      const auto near = util::closest_matches(field, kFields, 1);
      diags.add(v.origin().describe(),
                quote(where_key + "." + field) + " is not a field of a callback; fields: " + util::join(kFields, ", "),
                near.empty() ? std::string() : "did you mean `" + near[0] + "`?");
      ok = false;
    }
  }
  if (!ok) return false;
  if (out.plugin.empty() == out.command.empty()) {
    diags.add(item.origin().describe(),
              where_key + (out.plugin.empty() ? " has neither a `plugin` nor a `command`"
                                              : " has both a `plugin` and a `command`"),
              "give each callback one: {plugin: path/libmine.so} or {command: '...'}");
    return false;
  }
  if ((out.plugin.empty() && has_plugin_field) || (out.command.empty() && has_command_field)) {
    diags.add(
        item.origin().describe(),
        where_key + (out.plugin.empty() ? " is a command, and `args` and `ranks` are a plugin's fields"
                                        : " is a plugin, and `on`, `background` and `required` are a command's fields"),
        "a plugin takes plugin, args, ranks; a command takes command, on, background, required");
    return false;
  }
  if (!out.command.empty() && out.on.empty()) out.on = {"evaluate", "save", "end"};
  return true;
}

std::string flow_list(const std::vector<std::string>& items) { return "[" + util::join(items, ", ") + "]"; }

}  // namespace

std::optional<Value> convert_callbacks(const Schema& schema, const Node& node, const KeySpec& spec,
                                       Diagnostics& diags) {
  if (!node.is_null() && !node.is_map() && !node.is_sequence()) {
    diags.add(node.origin().describe(), quote(spec.path) + " expects a list of callbacks, got a " + node.kind_name());
    return std::nullopt;
  }
  return convert_list<CallbackSpec>(
      node, quote(spec.path), [](const Node& n) { return n.is_map(); },
      [&](const Node& item, const std::string& where, CallbackSpec& out) {
        return convert_item(schema, item, where, out, diags);
      });
}

std::vector<std::pair<std::string, std::string>> callback_fields(const CallbackSpec& c) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!c.plugin.empty()) {
    out.emplace_back("plugin", c.plugin);
    if (!c.args.empty()) {
      std::vector<std::string> parts;
      for (const auto& [k, v] : c.args) parts.push_back(k + ": " + v);
      out.emplace_back("args", "{" + util::join(parts, ", ") + "}");
    }
    if (c.all_ranks) out.emplace_back("ranks", "all");
    return out;
  }
  out.emplace_back("command", c.command);
  out.emplace_back("on", flow_list(c.on));
  if (!c.background) out.emplace_back("background", "false");
  if (c.required) out.emplace_back("required", "true");
  return out;
}

std::string callback_text(const CallbackSpec& c) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : callback_fields(c)) parts.push_back(k + ": " + v);
  return "{" + util::join(parts, ", ") + "}";
}

}  // namespace hftrain::config
