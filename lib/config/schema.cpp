#include "config/schema.h"

#include <charconv>
#include <cmath>
#include <limits>

#include "config/callbacks_config.h"
#include "config/data_sources.h"
#include "config/units.h"
#include "config/yaml_load.h"
#include "util/strings.h"

namespace hftrain::config {
namespace {

std::string number_text(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto [ptr, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, ptr);
}

std::string quote(const std::string& s) { return "`" + s + "`"; }

// YAML 1.2 core-schema spellings of special floats.
std::optional<double> special_float(const std::string& t) {
  static const char* kPosInf[] = {".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "inf"};
  static const char* kNegInf[] = {"-.inf", "-.Inf", "-.INF", "-inf"};
  static const char* kNan[] = {".nan", ".NaN", ".NAN", "nan", "NaN"};
  for (const char* s : kPosInf) if (t == s) return std::numeric_limits<double>::infinity();
  for (const char* s : kNegInf) if (t == s) return -std::numeric_limits<double>::infinity();
  for (const char* s : kNan) if (t == s) return std::numeric_limits<double>::quiet_NaN();
  return std::nullopt;
}

// Parses the whole text as a double; distinguishes "not a number" from "overflows".
enum class FloatParse { kOk, kInvalid, kOverflow };
FloatParse parse_double(const std::string& text, double& out) {
  if (auto special = special_float(text)) {
    out = *special;
    return FloatParse::kOk;
  }
  const char* b = text.data();
  const char* e = b + text.size();
  if (b != e && *b == '+') ++b;
  auto [ptr, ec] = std::from_chars(b, e, out);
  if (ec == std::errc::result_out_of_range) return FloatParse::kOverflow;
  if (ec != std::errc() || ptr != e || b == e) return FloatParse::kInvalid;
  return FloatParse::kOk;
}

}  // namespace

std::string KeySpec::type_name() const {
  switch (type) {
    case Type::kInt: return "integer";
    case Type::kFloat: return "float";
    case Type::kBool: return "bool";
    case Type::kString: return "string";
    case Type::kChoice: return "one of " + util::join(choices, "|");
    case Type::kSize: return "size (e.g. 25MiB)";
    case Type::kCount: return "count (e.g. 10M)";
    case Type::kDuration: return "duration (e.g. 30s, 10m)";
    case Type::kStringList: return "list of strings";
    case Type::kStringMap: return "map of strings";
    case Type::kFloatMap: return "map of floats";
    case Type::kFloatList: return "list of floats";
    case Type::kSourceList: return "list of sources (paths or {path, weight, name, format, ...})";
    case Type::kCallbackList: return "list of callbacks ({plugin, args, ranks} or {command, on, background, required})";
  }
  return "?";
}

std::string KeySpec::range_text() const {
  if (!min && !max) return {};
  return "[" + (min ? number_text(*min) : std::string("-inf")) + ", " +
         (max ? number_text(*max) + "]" : std::string("inf)"));
}

KeySpec& Schema::new_key(std::string path, Type type) {
  KeySpec spec;
  spec.segments = util::split(path, '.');
  spec.path = std::move(path);
  spec.type = type;
  spec.on_resume = section_resume_;
  keys_.push_back(std::move(spec));
  return keys_.back();
}

void Schema::section(std::string name, std::string doc, ResumeChange on_resume) {
  sections_.emplace_back(std::move(name), std::move(doc));
  section_resume_ = on_resume;
}

std::string_view resume_change_name(ResumeChange change) {
  switch (change) {
    case ResumeChange::kUnset: return "unset";
    case ResumeChange::kSafe: return "safe";
    case ResumeChange::kTraining: return "changes training";
    case ResumeChange::kDataOrder: return "changes the data order";
    case ResumeChange::kImpossible: return "impossible";
  }
  return "?";
}

const KeySpec* Schema::find(std::string_view path) const {
  for (const auto& k : keys_) {
    if (k.path == path) return &k;
  }
  return nullptr;
}

const KeySpec* Schema::find(const KeyPath& segments) const {
  for (const auto& k : keys_) {
    if (k.segments == segments) return &k;
  }
  return nullptr;
}

bool Schema::is_section(const KeyPath& path) const {
  for (const auto& k : keys_) {
    if (k.segments.size() > path.size() &&
        std::equal(path.begin(), path.end(), k.segments.begin())) {
      return true;
    }
  }
  return false;
}

const KeySpec* Schema::free_form_parent(const KeyPath& path) const {
  for (const auto& k : keys_) {
    if ((k.type == Type::kStringMap || k.type == Type::kFloatMap) && path.size() > k.segments.size() &&
        std::equal(k.segments.begin(), k.segments.end(), path.begin())) {
      return &k;
    }
  }
  return nullptr;
}

std::vector<std::string> Schema::all_paths() const {
  std::vector<std::string> out;
  for (const auto& [name, doc] : sections_) out.push_back(name);
  for (const auto& k : keys_) out.push_back(k.path);
  return out;
}

Node Schema::defaults_tree() const {
  const Origin origin;  // kind kDefault
  Node root = Node::map(origin);
  for (const auto& k : keys_) {
    Node* cur = &root;
    for (size_t i = 0; i + 1 < k.segments.size(); ++i) {
      Node* next = cur->find(k.segments[i]);
      if (!next) next = &cur->set(k.segments[i], Node::map(origin));
      cur = next;
    }
    cur->set(k.segments.back(), parse_yaml_value(k.default_yaml, origin));
  }
  return root;
}

std::optional<Value> Schema::convert(const Node& node, const KeySpec& spec, Diagnostics& diags) const {
  const std::string where = node.origin().describe();
  const std::string key = quote(spec.path);
  auto fail = [&](const std::string& message, const std::string& hint = {}) -> std::optional<Value> {
    diags.add(where, message, hint);
    return std::nullopt;
  };
  auto expected = [&]() {
    const std::string t = spec.type_name();
    const bool vowel = t[0] == 'i';  // "an integer"
    return key + " expects " + (spec.type == Type::kChoice ? "" : vowel ? "an " : "a ") + t;
  };

  if (node.is_null()) {
    if (spec.nullable) return Value{std::monostate{}};
    if (spec.type == Type::kStringList) return Value{std::vector<std::string>{}};
    if (spec.type == Type::kStringMap) return Value{std::map<std::string, std::string>{}};
    if (spec.type == Type::kFloatMap) return Value{std::map<std::string, double>{}};
    if (spec.type == Type::kFloatList) return Value{std::vector<double>{}};
    if (spec.type == Type::kSourceList) return Value{std::vector<DataSource>{}};
    if (spec.type == Type::kCallbackList) return Value{std::vector<CallbackSpec>{}};
    return fail(key + " has no value; it expects " + spec.type_name(),
                "give it a value, or remove the line to use the default");
  }

  if (spec.type == Type::kSourceList) return convert_sources(*this, node, spec, diags);
  if (spec.type == Type::kCallbackList) return convert_callbacks(*this, node, spec, diags);
  if (spec.type == Type::kStringList) {
    if (node.is_scalar()) return Value{std::vector<std::string>{node.text()}};
    if (!node.is_sequence()) return fail(expected() + ", got a " + node.kind_name());
    std::vector<std::string> out;
    for (const auto& item : node.items()) {
      if (!item.is_scalar()) return fail(expected() + ", but an item is a " + item.kind_name());
      out.push_back(item.text());
    }
    return Value{std::move(out)};
  }
  if (spec.type == Type::kStringMap) {
    if (!node.is_map()) return fail(expected() + ", got a " + node.kind_name());
    std::map<std::string, std::string> out;
    for (const auto& [k, v] : node.entries()) {
      if (v.is_null()) continue;  // `~` removed it
      if (!v.is_scalar()) {
        diags.add(v.origin().describe(), quote(spec.path + "." + k) + " must be a string, not a " + v.kind_name());
        return std::nullopt;
      }
      out[k] = v.text();
    }
    return Value{std::move(out)};
  }

  if (spec.type == Type::kFloatMap) {
    if (!node.is_map()) return fail(expected() + ", got a " + node.kind_name());
    std::map<std::string, double> out;
    KeySpec entry = spec;  // each value is checked as a float with the key's range
    entry.type = Type::kFloat;
    for (const auto& [k, v] : node.entries()) {
      if (v.is_null()) continue;  // `~` removed it
      entry.path = spec.path + "." + k;
      auto converted = convert(v, entry, diags);
      if (!converted) return std::nullopt;
      out[k] = std::get<double>(*converted);
    }
    return Value{std::move(out)};
  }

  if (spec.type == Type::kFloatList) {
    if (!node.is_sequence()) return fail(expected() + ", got a " + node.kind_name(), "write [1.0, 1.5, ...]");
    std::vector<double> out;
    KeySpec item_spec = spec;  // each item is checked as a float with the key's range
    item_spec.type = Type::kFloat;
    size_t i = 0;
    for (const auto& item : node.items()) {
      item_spec.path = spec.path + "[" + std::to_string(i++) + "]";
      auto converted = convert(item, item_spec, diags);
      if (!converted) return std::nullopt;
      out.push_back(std::get<double>(*converted));
    }
    return Value{std::move(out)};
  }

  if (!node.is_scalar()) return fail(expected() + ", got a " + node.kind_name());
  const std::string& text = node.text();
  const bool numeric = spec.type == Type::kInt || spec.type == Type::kFloat;
  if (node.quoted() && (numeric || spec.type == Type::kBool)) {
    return fail(expected() + ", got the string \"" + text + "\"", "remove the quotes");
  }

  double number = 0;  // for the range check, in the key's base unit
  Value value;
  switch (spec.type) {
    case Type::kInt: {
      int64_t v = 0;
      const char* b = text.data() + (text.size() > 1 && text[0] == '+' ? 1 : 0);
      auto [ptr, ec] = std::from_chars(b, text.data() + text.size(), v);
      if (ec == std::errc::result_out_of_range) {
        return fail(key + " = " + text + " does not fit in a 64-bit integer");
      }
      if (ec != std::errc() || ptr != text.data() + text.size()) {
        double d = 0;
        // 1e4 is a float in YAML, but an exact whole number is what the user meant.
        if (parse_double(text, d) == FloatParse::kOk && std::isfinite(d) && d == std::floor(d) &&
            std::fabs(d) < 9.2e18) {
          v = static_cast<int64_t>(d);
        } else {
          return fail(expected() + ", got `" + text + "`");
        }
      }
      value = v;
      number = static_cast<double>(v);
      break;
    }
    case Type::kFloat: {
      double v = 0;
      switch (parse_double(text, v)) {
        case FloatParse::kInvalid: return fail(expected() + ", got `" + text + "`");
        case FloatParse::kOverflow:
          if (text.find("e-") != std::string::npos || text.find("E-") != std::string::npos) {
            return fail(key + " = " + text + " is too small for a float", "use 0 or a larger value");
          }
          return fail(key + " = " + text + " is too large for a float", "use a finite number");
        case FloatParse::kOk: break;
      }
      if (std::isnan(v)) return fail(key + " is NaN", "give a number");
      if (std::isinf(v) && !spec.allow_inf) {
        return fail(key + " = " + text + " is not finite", "give a finite number");
      }
      value = v;
      number = v;
      break;
    }
    case Type::kBool:
      if (text == "true" || text == "True" || text == "TRUE") value = true;
      else if (text == "false" || text == "False" || text == "FALSE") value = false;
      else return fail(expected() + ", got `" + text + "`", "write true or false");
      break;
    case Type::kString:
      value = text;
      break;
    case Type::kChoice: {
      std::string choice = text;
      if (auto it = spec.aliases.find(choice); it != spec.aliases.end()) choice = it->second;
      bool ok = false;
      for (const auto& c : spec.choices) ok = ok || c == choice;
      if (!ok) {
        auto near = util::closest_matches(text, spec.choices, 1);
        return fail(key + " = `" + text + "` is not allowed; allowed: " +
                        util::join(spec.choices, ", "),
                    near.empty() ? std::string() : "did you mean `" + near[0] + "`?");
      }
      value = choice;
      break;
    }
    case Type::kSize:
    case Type::kCount: {
      auto parsed = spec.type == Type::kSize ? parse_size(text) : parse_count(text);
      if (auto* err = std::get_if<std::string>(&parsed)) return fail(key + ": " + *err);
      value = std::get<int64_t>(parsed);
      number = static_cast<double>(std::get<int64_t>(parsed));
      break;
    }
    case Type::kDuration: {
      auto parsed = parse_duration(text);
      if (auto* err = std::get_if<std::string>(&parsed)) return fail(key + ": " + *err);
      value = std::get<double>(parsed);
      number = std::get<double>(parsed);
      break;
    }
    case Type::kStringList:
    case Type::kSourceList:
    case Type::kCallbackList:
    case Type::kStringMap:
    case Type::kFloatMap:
    case Type::kFloatList:
      break;
  }
  const bool has_number = spec.type != Type::kBool && spec.type != Type::kString &&
                          spec.type != Type::kChoice;
  if (has_number && ((spec.min && number < *spec.min) || (spec.max && number > *spec.max))) {
    return fail(key + " = " + text + " is out of range " + spec.range_text());
  }
  return value;
}

std::string value_to_text(const Value& value, const KeySpec& spec) {
  struct Visitor {
    const KeySpec& spec;
    std::string operator()(std::monostate) const { return "null"; }
    std::string operator()(int64_t v) const {
      if (spec.type == Type::kSize) return format_size(v);
      if (spec.type == Type::kCount) return format_count(v);
      return std::to_string(v);
    }
    std::string operator()(double v) const {
      if (spec.type == Type::kDuration) return format_duration(v);
      if (std::isinf(v)) return v > 0 ? ".inf" : "-.inf";
      std::string t = number_text(v);
      // Keep floats recognisable as floats when written back as YAML.
      if (t.find_first_of(".e") == std::string::npos) t += ".0";
      return t;
    }
    std::string operator()(bool v) const { return v ? "true" : "false"; }
    std::string operator()(const std::string& v) const { return v; }
    std::string operator()(const std::vector<std::string>& v) const {
      return "[" + util::join(v, ", ") + "]";
    }
    std::string operator()(const std::map<std::string, std::string>& v) const {
      std::vector<std::string> parts;
      for (const auto& [k, x] : v) parts.push_back(k + ": " + x);
      return "{" + util::join(parts, ", ") + "}";
    }
    std::string operator()(const std::map<std::string, double>& v) const {
      std::vector<std::string> parts;
      for (const auto& [k, x] : v) parts.push_back(k + ": " + number_text(x));
      return "{" + util::join(parts, ", ") + "}";
    }
    std::string operator()(const std::vector<DataSource>& v) const {
      std::vector<std::string> parts;
      for (const auto& x : v) parts.push_back(data_source_text(x));
      return "[" + util::join(parts, ", ") + "]";
    }
    std::string operator()(const std::vector<CallbackSpec>& v) const {
      std::vector<std::string> parts;
      for (const auto& x : v) parts.push_back(callback_text(x));
      return "[" + util::join(parts, ", ") + "]";
    }
    std::string operator()(const std::vector<double>& v) const {
      KeySpec item = spec;
      item.type = Type::kFloat;
      std::vector<std::string> parts;
      for (double x : v) parts.push_back(value_to_text(Value{x}, item));
      return "[" + util::join(parts, ", ") + "]";
    }
  };
  return std::visit(Visitor{spec}, value);
}

}  // namespace hftrain::config
