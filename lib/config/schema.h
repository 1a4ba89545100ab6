// The typed schema: every config key declared once with its type, default, one-line doc, allowed
// values or range, and unit, plus the struct field it fills. Validation, `hftrain config --schema`,
// the README's reference and the resolved-config writer all read these declarations.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "config/config.h"
#include "config/diagnostics.h"
#include "config/node.h"

namespace hftrain::config {

enum class Type {
  kInt,         // 64-bit integer
  kFloat,       // finite double (+inf only where allowed)
  kBool,        // true / false
  kString,      // any text
  kChoice,      // one of a fixed set of strings; filled into an enum field
  kSize,        // bytes, written 25MiB / 1GB / 4096
  kCount,       // a count, written 10M / 2B / 1000
  kDuration,    // seconds, written 30s / 10m / 1h30m
  kStringList,  // list of strings; a single string is a list of one
  kStringMap,   // free-form map of string values; `+key.sub=VALUE` adds entries
  kFloatMap,    // free-form map of floats, e.g. name pattern -> learning rate
  kFloatList,   // list of floats, each checked against the key's range
  kSourceList,  // data sources: a list of paths and {path, weight, name, format, ...} mappings
  kCallbackList,  // user callbacks: a list of {plugin, args, ranks} and {command, on, background, required}
};

// What changing a key means when a run is resumed from a checkpoint with overrides.
enum class ResumeChange {
  kUnset,       // not declared; tests require every key to declare one
  kSafe,        // logging, evaluation and save cadence, stopping, where things go: applied
  kTraining,    // changes the optimisation from the resumed step on (lr, clipping, precision): applied, logged
  kDataOrder,   // changes which samples come next (data, batch size, seed): refused unless --force
  kImpossible,  // the saved state cannot be used (model shape, tokenizer, optimizer type)
};
std::string_view resume_change_name(ResumeChange change);

using Value = std::variant<std::monostate, int64_t, double, bool, std::string,
                           std::vector<std::string>, std::map<std::string, std::string>,
                           std::map<std::string, double>, std::vector<DataSource>, std::vector<double>,
                           std::vector<CallbackSpec>>;

struct KeySpec {
  std::string path;    // "optimizer.lr"
  KeyPath segments;    // {"optimizer", "lr"}
  Type type = Type::kString;
  std::string doc;
  std::string default_yaml = "null";  // YAML text; may use ${...} interpolation
  bool nullable = false;              // null means "not set"
  std::optional<double> min, max;     // inclusive, in the key's base unit
  bool allow_inf = false;
  std::vector<std::string> choices;          // kChoice: allowed values, in enum order
  std::map<std::string, std::string> aliases;  // kChoice: alias -> canonical choice
  std::string unit;                          // for docs: "steps", "tokens", ...
  ResumeChange on_resume = ResumeChange::kUnset;
  std::function<void(Config&, const Value&, const KeySpec&)> assign;
  std::function<Value(const Config&, const KeySpec&)> read;

  std::string type_name() const;   // "integer", "one of gpt2|llama", "size (e.g. 25MiB)", ...
  std::string range_text() const;  // "[1, inf)", "" when unbounded
};

class Schema;

// Fluent setters for the key just added.
class KeyBuilder {
 public:
  explicit KeyBuilder(KeySpec& spec) : spec_(spec) {}
  KeyBuilder& def(std::string yaml) { spec_.default_yaml = std::move(yaml); return *this; }
  KeyBuilder& doc(std::string text) { spec_.doc = std::move(text); return *this; }
  KeyBuilder& min(double v) { spec_.min = v; return *this; }
  KeyBuilder& max(double v) { spec_.max = v; return *this; }
  KeyBuilder& nullable() { spec_.nullable = true; return *this; }
  KeyBuilder& allow_inf() { spec_.allow_inf = true; return *this; }
  KeyBuilder& unit(std::string u) { spec_.unit = std::move(u); return *this; }
  KeyBuilder& choices(std::vector<std::string> c) { spec_.choices = std::move(c); return *this; }
  KeyBuilder& on_resume(ResumeChange c) { spec_.on_resume = c; return *this; }
  KeyBuilder& alias(std::string from, std::string to) {
    spec_.aliases.emplace(std::move(from), std::move(to));
    return *this;
  }

 private:
  KeySpec& spec_;
};

namespace detail {
template <class T> struct IsOptional : std::false_type {};
template <class T> struct IsOptional<std::optional<T>> : std::true_type {};

template <class Field>
void assign_field(Field& field, const Value& v, const KeySpec& spec) {
  if constexpr (IsOptional<Field>::value) {
    if (std::holds_alternative<std::monostate>(v)) {
      field.reset();
    } else {
      typename Field::value_type inner{};
      assign_field(inner, v, spec);
      field = std::move(inner);
    }
  } else if constexpr (std::is_enum_v<Field>) {
    const auto& text = std::get<std::string>(v);
    for (size_t i = 0; i < spec.choices.size(); ++i) {
      if (spec.choices[i] == text) field = static_cast<Field>(i);
    }
  } else {
    field = std::get<Field>(v);
  }
}

template <class Field>
Value read_field(const Field& field, const KeySpec& spec) {
  if constexpr (IsOptional<Field>::value) {
    if (!field) return std::monostate{};
    return read_field(*field, spec);
  } else if constexpr (std::is_enum_v<Field>) {
    return spec.choices.at(static_cast<size_t>(field));
  } else {
    return field;
  }
}
}  // namespace detail

class Schema {
 public:
  // Declares a key. `field` is a generic lambda returning a reference to the struct field,
  // e.g. [](auto& c) -> auto& { return c.optimizer.lr; }.
  template <class Accessor>
  KeyBuilder add(std::string path, Type type, Accessor field) {
    KeySpec& spec = new_key(std::move(path), type);
    spec.assign = [field](Config& c, const Value& v, const KeySpec& s) {
      detail::assign_field(field(c), v, s);
    };
    spec.read = [field](const Config& c, const KeySpec& s) { return detail::read_field(field(c), s); };
    return KeyBuilder(spec);
  }
  // A top-level section and its one-line doc; keys are added under it and take `on_resume` as
  // their resume class unless they declare their own.
  void section(std::string name, std::string doc, ResumeChange on_resume = ResumeChange::kUnset);

  const std::vector<KeySpec>& keys() const { return keys_; }
  const std::vector<std::pair<std::string, std::string>>& sections() const { return sections_; }
  const KeySpec* find(std::string_view path) const;
  const KeySpec* find(const KeyPath& segments) const;
  // True when `path` is a proper prefix of some key (a section or sub-section).
  bool is_section(const KeyPath& path) const;
  // The free-form map key that `path` lies strictly inside, or nullptr.
  const KeySpec* free_form_parent(const KeyPath& path) const;
  // Every key and section path, for suggestions.
  std::vector<std::string> all_paths() const;

  // A tree holding every key's default, each with origin "default".
  Node defaults_tree() const;

  // Converts a node to the key's typed value; reports problems and returns nullopt on failure.
  std::optional<Value> convert(const Node& node, const KeySpec& spec, Diagnostics& diags) const;

 private:
  KeySpec& new_key(std::string path, Type type);

  std::vector<KeySpec> keys_;
  std::vector<std::pair<std::string, std::string>> sections_;
  ResumeChange section_resume_ = ResumeChange::kUnset;
};

// hftrain's schema (keys.cpp, its keys declared in keys_*.cpp).
const Schema& product_schema();

// The fields a data source mapping may set (kSourceList), in the order they are written.
const std::vector<std::string>& data_source_fields();
// The text of one data source entry: its path, or a flow mapping of the fields it sets.
std::string data_source_text(const DataSource& source);

// The scalar text of a value as hftrain writes it (units spelled out for sizes, counts, durations).
std::string value_to_text(const Value& value, const KeySpec& spec);

}  // namespace hftrain::config
