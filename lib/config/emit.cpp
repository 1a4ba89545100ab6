#include "config/emit.h"


#include <charconv>
#include <cmath>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "config/data_sources.h"
#include "config/yaml_load.h"
#include "util/build_info.h"
#include "util/error.h"
#include "util/fs.h"

namespace hftrain::config {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

// The schema's keys as a nested outline, in declaration order.
struct Outline {
  std::string name;
  std::vector<Outline> children;
  const KeySpec* key = nullptr;

  Outline& child(const std::string& child_name) {
    for (auto& c : children) {
      if (c.name == child_name) return c;
    }
    children.push_back(Outline{child_name, {}, nullptr});
    return children.back();
  }
};

Outline outline_of(const Schema& schema) {
  Outline root;
  for (const auto& spec : schema.keys()) {
    Outline* cur = &root;
    for (const auto& seg : spec.segments) cur = &cur->child(seg);
    cur->key = &spec;
  }
  return root;
}

std::string origin_of(const ResolvedConfig& c, const KeyPath& path) {
  const Node* n = c.tree.find_path(path);
  return n ? n->origin().describe() : "default";
}

// A string that would read back as something else (null, bool, number) gets quotes.
bool needs_quotes(const std::string& s) {
  if (s.empty()) return true;
  for (unsigned char ch : s) {
    if (ch < 0x20 || ch == 0x7f) return true;  // \r, \t, ... only survive inside double quotes
  }
  try {
    Node n = parse_yaml_value(s, Origin{});
    if (!n.is_scalar() || n.quoted() || n.text() != s) return true;
  } catch (const util::Error&) {
    return true;
  }
  static const char* kWords[] = {"true", "false", "True", "False", "TRUE", "FALSE", "null",
                                 "Null", "NULL", "~", "yes", "no", "on", "off"};
  for (const char* w : kWords) {
    if (s == w) return true;
  }
  double d = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
  return ec == std::errc() && ptr == s.data() + s.size();
}

// Strings are written so that they read back as the same string: a literal "${" is escaped so
// that interpolation leaves it alone, and anything YAML would read as something else is quoted.
void emit_string(YAML::Emitter& out, const std::string& raw) {
  std::string s;
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw.compare(i, 2, "${") == 0) s += '\\';
    s += raw[i];
  }
  if (needs_quotes(s)) out << YAML::DoubleQuoted;
  out << s;
}

// A free-form map, each entry with its own origin comment. Quoted keys: they may be name patterns.
template <class Map, class EmitValue>
void emit_map(YAML::Emitter& out, const Map& map, const KeySpec& spec, const ResolvedConfig& c,
              bool provenance, EmitValue emit_value) {
  if (map.empty()) out << YAML::Flow;
  out << YAML::BeginMap;
  for (const auto& [k, x] : map) {
    out << YAML::Key;
    emit_string(out, k);
    out << YAML::Value;
    emit_value(x);
    if (provenance) {
      KeyPath p = spec.segments;
      p.push_back(k);
      out << YAML::Comment(origin_of(c, p));
    }
  }
  out << YAML::EndMap;
}

// Data sources: a flow list of paths, and of mappings for the entries that set more than a path.
void emit_sources(YAML::Emitter& out, const std::vector<DataSource>& sources) {
  out << YAML::Flow << YAML::BeginSeq;
  for (const auto& s : sources) {
    if (s.plain()) {
      emit_string(out, s.path);
      continue;
    }
    out << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "path" << YAML::Value;
    emit_string(out, s.path);
    if (s.weight) {
      KeySpec weight;
      weight.type = Type::kFloat;
      out << YAML::Key << "weight" << YAML::Value << value_to_text(Value{*s.weight}, weight);
    }
    for (const auto& [field, value] : data_source_strings(s)) {
      out << YAML::Key << field << YAML::Value;
      emit_string(out, value);
    }
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
}

// User callbacks: a block list of flow mappings, every string quoted as YAML needs.
void emit_callbacks(YAML::Emitter& out, const std::vector<CallbackSpec>& callbacks) {
  out << YAML::Flow << YAML::BeginSeq;
  for (const auto& cb : callbacks) {
    out << YAML::Flow << YAML::BeginMap;
    if (!cb.plugin.empty()) {
      out << YAML::Key << "plugin" << YAML::Value;
      emit_string(out, cb.plugin);
      if (!cb.args.empty()) {
        out << YAML::Key << "args" << YAML::Value << YAML::Flow << YAML::BeginMap;
        for (const auto& [k, v] : cb.args) {
          out << YAML::Key;
          emit_string(out, k);
          out << YAML::Value;
          emit_string(out, v);
        }
        out << YAML::EndMap;
      }
      if (cb.all_ranks) out << YAML::Key << "ranks" << YAML::Value << "all";
    } else {
      out << YAML::Key << "command" << YAML::Value;
      emit_string(out, cb.command);
      out << YAML::Key << "on" << YAML::Value << YAML::Flow << YAML::BeginSeq;
      for (const auto& e : cb.on) out << e;
      out << YAML::EndSeq;
      if (!cb.background) out << YAML::Key << "background" << YAML::Value << false;
      if (cb.required) out << YAML::Key << "required" << YAML::Value << true;
    }
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
}

void emit_yaml(YAML::Emitter& out, const Outline& node, const ResolvedConfig& c, bool provenance) {
  out << YAML::BeginMap;
  for (const auto& child : node.children) {
    out << YAML::Key << child.name << YAML::Value;
    if (!child.key) {
      emit_yaml(out, child, c, provenance);
      continue;
    }
    const KeySpec& spec = *child.key;
    const Value v = spec.read(c.values, spec);
    if (std::holds_alternative<std::monostate>(v)) {
      out << YAML::Null;
    } else if (auto* s = std::get_if<std::string>(&v)) {
      emit_string(out, *s);
    } else if (auto* list = std::get_if<std::vector<std::string>>(&v)) {
      out << YAML::Flow << YAML::BeginSeq;
      for (const auto& item : *list) emit_string(out, item);
      out << YAML::EndSeq;
    } else if (auto* floats = std::get_if<std::vector<double>>(&v)) {
      KeySpec item = spec;
      item.type = Type::kFloat;
      out << YAML::Flow << YAML::BeginSeq;
      for (double x : *floats) out << value_to_text(Value{x}, item);
      out << YAML::EndSeq;
    } else if (auto* sources = std::get_if<std::vector<DataSource>>(&v)) {
      emit_sources(out, *sources);
    } else if (auto* callbacks = std::get_if<std::vector<CallbackSpec>>(&v)) {
      emit_callbacks(out, *callbacks);
    } else if (auto* map = std::get_if<std::map<std::string, std::string>>(&v)) {
      emit_map(out, *map, spec, c, provenance, [&](const std::string& x) { emit_string(out, x); });
      if (!map->empty()) continue;  // entries carry their own comments
    } else if (auto* fmap = std::get_if<std::map<std::string, double>>(&v)) {
      KeySpec entry = spec;
      entry.type = Type::kFloat;
      emit_map(out, *fmap, spec, c, provenance, [&](double x) { out << value_to_text(Value{x}, entry); });
      if (!fmap->empty()) continue;
    } else {
      out << value_to_text(v, spec);
    }
    if (provenance) out << YAML::Comment(origin_of(c, spec.segments));
  }
  out << YAML::EndMap;
}

Json json_value(const Value& v, const KeySpec& spec) {
  struct Visitor {
    const KeySpec& spec;
    Json operator()(std::monostate) const { return nullptr; }
    Json operator()(int64_t x) const { return x; }
    Json operator()(double x) const {
      if (std::isinf(x)) return x > 0 ? ".inf" : "-.inf";
      return x;
    }
    Json operator()(bool x) const { return x; }
    Json operator()(const std::string& x) const { return x; }
    Json operator()(const std::vector<std::string>& x) const { return x; }
    Json operator()(const std::vector<double>& x) const { return x; }
    Json operator()(const std::vector<DataSource>& x) const {
      Json list = Json::array();
      for (const auto& s : x) {
        if (s.plain()) {
          list.push_back(s.path);
          continue;
        }
        Json obj = Json::object();
        obj["path"] = s.path;
        if (s.weight) obj["weight"] = *s.weight;
        for (const auto& [field, value] : data_source_strings(s)) obj[field] = value;
        list.push_back(std::move(obj));
      }
      return list;
    }
    Json operator()(const std::vector<CallbackSpec>& x) const {
      Json list = Json::array();
      for (const auto& cb : x) {
        Json obj = Json::object();
        if (!cb.plugin.empty()) {
          obj["plugin"] = cb.plugin;
          if (!cb.args.empty()) obj["args"] = cb.args;
          obj["ranks"] = cb.all_ranks ? "all" : "main";
        } else {
          obj["command"] = cb.command;
          obj["on"] = cb.on;
          obj["background"] = cb.background;
          obj["required"] = cb.required;
        }
        list.push_back(std::move(obj));
      }
      return list;
    }
    Json operator()(const std::map<std::string, std::string>& x) const {
      Json obj = Json::object();
      for (const auto& [k, s] : x) obj[k] = s;
      return obj;
    }
    Json operator()(const std::map<std::string, double>& x) const {
      Json obj = Json::object();
      for (const auto& [k, d] : x) obj[k] = d;
      return obj;
    }
  };
  return std::visit(Visitor{spec}, v);
}

Json emit_json(const Outline& node, const ResolvedConfig& c, bool provenance) {
  Json obj = Json::object();
  for (const auto& child : node.children) {
    const std::string& name = child.name;
    if (!child.key) {
      obj[name] = emit_json(child, c, provenance);
      continue;
    }
    Json value = json_value(child.key->read(c.values, *child.key), *child.key);
    if (provenance) {
      obj[name] = Json{{"value", std::move(value)}, {"origin", origin_of(c, child.key->segments)}};
    } else {
      obj[name] = std::move(value);
    }
  }
  return obj;
}

std::string section_doc(const Schema& schema, const std::string& name) {
  for (const auto& [n, doc] : schema.sections()) {
    if (n == name) return doc;
  }
  return {};
}

// Pipes inside a table cell (choice lists) would split the row.
std::string md_cell(const std::string& text) {
  std::string out;
  for (char ch : text) {
    if (ch == '|') out += '\\';
    out += ch;
  }
  return out;
}

}  // namespace

std::string to_yaml(const ResolvedConfig& config, const Schema& schema, bool provenance) {
  YAML::Emitter out;
  emit_yaml(out, outline_of(schema), config, provenance);
  return std::string(out.c_str()) + "\n";
}

std::string to_json(const ResolvedConfig& config, const Schema& schema, bool provenance) {
  return emit_json(outline_of(schema), config, provenance).dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::string schema_text(const Schema& schema) {
  std::string out;
  std::string current;
  for (const auto& spec : schema.keys()) {
    if (spec.segments[0] != current) {
      current = spec.segments[0];
      out += (out.empty() ? "" : "\n") + current + ": " + section_doc(schema, current) + "\n";
    }
    out += "  " + spec.path + "  (" + spec.type_name() + ", default " +
           (spec.nullable && spec.default_yaml == "null" ? "unset" : spec.default_yaml);
    if (!spec.range_text().empty()) out += ", range " + spec.range_text();
    if (!spec.unit.empty()) out += ", " + spec.unit;
    out += "; on resume: " + std::string(resume_change_name(spec.on_resume));
    out += ")\n      " + spec.doc + "\n";
  }
  return out;
}

std::string schema_markdown(const Schema& schema) {
  std::string out;
  std::string current;
  for (const auto& spec : schema.keys()) {
    if (spec.segments[0] != current) {
      current = spec.segments[0];
      out += (out.empty() ? "" : "\n") + std::string("### `") + current + "`\n\n" +
             section_doc(schema, current) + "\n\n| key | type | default | on resume | doc |\n|---|---|---|---|---|\n";
    }
    std::string type = spec.type_name();
    if (!spec.range_text().empty()) type += ", " + spec.range_text();
    if (!spec.unit.empty()) type += " " + spec.unit;
    std::string def = spec.nullable && spec.default_yaml == "null" ? "unset" : "`" + spec.default_yaml + "`";
    out += "| `" + spec.path + "` | " + md_cell(type) + " | " + md_cell(def) + " | " +
           std::string(resume_change_name(spec.on_resume)) + " | " + md_cell(spec.doc) + " |\n";
  }
  return out;
}

std::string schema_json(const Schema& schema) {
  Json keys = Json::array();
  for (const auto& spec : schema.keys()) {
    Json k{{"key", spec.path}, {"type", spec.type_name()}, {"default", spec.default_yaml},
           {"nullable", spec.nullable}, {"doc", spec.doc}};
    if (spec.min) k["min"] = *spec.min;
    if (spec.max) k["max"] = *spec.max;
    if (!spec.choices.empty()) k["choices"] = spec.choices;
    if (!spec.aliases.empty()) k["aliases"] = spec.aliases;
    if (!spec.unit.empty()) k["unit"] = spec.unit;
    k["on_resume"] = std::string(resume_change_name(spec.on_resume));
    keys.push_back(std::move(k));
  }
  return keys.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::string resolved_config_text(const ResolvedConfig& config, const Schema& schema) {
  return "# Resolved by hftrain " + std::string(util::kBuildFlags.version) + " (" + util::kBuildFlags.revision +
         "); each value's origin is in its comment.\n" + to_yaml(config, schema, /*provenance=*/true);
}

void write_resolved_config(const ResolvedConfig& config, const Schema& schema, const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    throw util::IoError("cannot create run directory " + dir.string() + ": " + ec.message(),
                        "check run.output_dir and its permissions");
  }
  util::atomic_write_file(dir / "config.yaml", resolved_config_text(config, schema));
}

}  // namespace hftrain::config
