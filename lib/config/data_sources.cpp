// data.train and data.validation (Type::kSourceList): a list whose items are paths or mappings
// {path, weight, name, format, text_field, ...}. A single path is a list of one. Every problem is
// reported at the item or field it concerns.
#include <cmath>

#include "config/data_sources.h"
#include "config/list_items.h"
#include "util/strings.h"

namespace hftrain::config {
namespace {

std::string quote(const std::string& s) { return "`" + s + "`"; }

const char* const kFormats[] = {"auto", "text", "jsonl", "chat", "tokens"};  // DataFormat's order

// One item. Returns false (having reported why) when it cannot be used. Weights and formats are
// checked as the schema checks a float key (at least 0) and data.format.
bool convert_item(const Schema& schema, const Node& item, const std::string& where_key, DataSource& out,
                  Diagnostics& diags) {
  if (item.is_scalar()) {
    out.path = item.text();
    return true;
  }
  if (!item.is_map()) {
    diags.add(item.origin().describe(),
              where_key + " must be a path or a mapping with a `path`, not a " + item.kind_name());
    return false;
  }
  bool ok = true;
  auto text_of = [&](const std::string& field, const Node& v) -> std::optional<std::string> {
    if (!v.is_scalar()) {
      diags.add(v.origin().describe(), quote(where_key + "." + field) + " must be a string, not a " + v.kind_name());
      ok = false;
      return std::nullopt;
    }
    return v.text();
  };
  for (const auto& [field, v] : item.entries()) {
    if (v.is_null()) continue;
    if (field == "path") {
      if (auto t = text_of(field, v)) out.path = *t;
    } else if (field == "name") {
      if (auto t = text_of(field, v)) out.name = *t;
    } else if (field == "weight") {
      KeySpec weight;
      weight.path = where_key + ".weight";
      weight.type = Type::kFloat;
      weight.min = 0;
      if (auto w = schema.convert(v, weight, diags)) {
        out.weight = std::get<double>(*w);
      } else {
        ok = false;
      }
    } else if (field == "format") {
      KeySpec format;
      format.type = Type::kChoice;
      format.choices.assign(std::begin(kFormats), std::end(kFormats));
      format.path = where_key + ".format";
      if (auto f = schema.convert(v, format, diags)) {
        for (size_t i = 0; i < std::size(kFormats); ++i) {
          if (std::get<std::string>(*f) == kFormats[i]) out.format = static_cast<DataFormat>(i);
        }  // convert() accepted it, so it is one of them
      } else {
        ok = false;
      }
    } else if (field == "text_field" || field == "prompt_field" || field == "response_field" ||
               field == "messages_field" || field == "separator") {
      auto t = text_of(field, v);
      if (!t) continue;
      if (field == "text_field") out.text_field = *t;
      if (field == "prompt_field") out.prompt_field = *t;
      if (field == "response_field") out.response_field = *t;
      if (field == "messages_field") out.messages_field = *t;
      if (field == "separator") out.separator = *t;
    } else {
      const auto near = util::closest_matches(field, data_source_fields(), 1);
      diags.add(v.origin().describe(), quote(where_key + "." + field) + " is not a field of a data source; fields: " +
                                           util::join(data_source_fields(), ", "),
                near.empty() ? std::string() : "did you mean `" + near[0] + "`?");
      ok = false;
    }
  }
  if (ok && out.path.empty()) {
    diags.add(item.origin().describe(), where_key + " has no `path`", "add path: FILE, FOLDER or GLOB");
    ok = false;
  }
  return ok;
}

}  // namespace

std::string_view data_format_name(DataFormat format) { return kFormats[static_cast<int>(format)]; }

const std::vector<std::string>& data_source_fields() {
  static const std::vector<std::string> kFields{"path", "weight", "name", "format", "text_field",
                                                "prompt_field", "response_field", "messages_field", "separator"};
  return kFields;
}

std::vector<std::pair<std::string, std::string>> data_source_strings(const DataSource& s) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!s.name.empty()) out.emplace_back("name", s.name);
  if (s.format) out.emplace_back("format", std::string(data_format_name(*s.format)));
  const std::pair<const char*, const std::optional<std::string>*> texts[] = {
      {"text_field", &s.text_field}, {"prompt_field", &s.prompt_field}, {"response_field", &s.response_field},
      {"messages_field", &s.messages_field}, {"separator", &s.separator}};
  for (const auto& [field, value] : texts) {
    if (*value) out.emplace_back(field, **value);
  }
  return out;
}

std::string data_source_text(const DataSource& s) {
  if (s.plain()) return s.path;
  std::vector<std::string> parts{"path: " + s.path};
  if (s.weight) {
    KeySpec weight;
    weight.type = Type::kFloat;
    parts.push_back("weight: " + value_to_text(Value{*s.weight}, weight));
  }
  for (const auto& [field, value] : data_source_strings(s)) parts.push_back(field + ": " + value);
  return "{" + util::join(parts, ", ") + "}";
}

std::optional<Value> convert_sources(const Schema& schema, const Node& node, const KeySpec& spec,
                                     Diagnostics& diags) {
  return convert_list<DataSource>(
      node, quote(spec.path), [](const Node& n) { return n.is_scalar() || n.is_map(); },
      [&](const Node& item, const std::string& where, DataSource& out) {
        return convert_item(schema, item, where, out, diags);
      });
}

}  // namespace hftrain::config
