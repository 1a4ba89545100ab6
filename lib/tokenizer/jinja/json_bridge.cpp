// JSON in (the render context) and out (tojson, Python's json.dumps).
#include "tokenizer/jinja/json_bridge.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "tokenizer/jinja/error.h"
#include "tokenizer/jinja/operators.h"
#include "tokenizer/jinja/py_format.h"
#include "tokenizer/jinja/text.h"

namespace hftrain::tokenizer::jinja {
namespace {

Value from_json_at(const nlohmann::ordered_json& j, uint32_t depth) {
  if (depth > kMaxValueDepth) eval_fail("the context nests deeper than " + std::to_string(kMaxValueDepth) + " levels");
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null:
      return Value::none();
    case nlohmann::ordered_json::value_t::boolean:
      return Value::from_bool(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Value::from_int(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const auto u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        eval_fail("the context holds an integer beyond 64 bits (" + std::to_string(u) + ")");
      return Value::from_int(static_cast<int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float:
      return Value::from_float(j.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return Value::from_string(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& item : j) items.push_back(from_json_at(item, depth + 1));
      return Value::from_seq(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      Dict d;
      for (const auto& [k, item] : j.items()) d.set(Value::from_string(k), from_json_at(item, depth + 1));
      return Value::from_dict(std::move(d));
    }
    default:
      eval_fail("the context holds a JSON value of an unsupported type (binary)");
  }
}

void append_hex4(std::string& out, uint32_t v) {
  static const char* kHex = "0123456789abcdef";
  out += "\\u";
  for (int shift = 12; shift >= 0; shift -= 4) out += kHex[(v >> shift) & 0xF];
}

void dump_string(std::string& out, std::string_view s, bool ensure_ascii) {
  out += '"';
  const auto plain = [](char b) { return b >= 0x20 && b < 0x7F && b != '"' && b != '\\'; };
  for (size_t i = 0, len = 0; i < s.size(); i += len) {
    if (out.size() > kMaxBuiltSize) check_built_size(out.size());  // escapes grow it up to 6 times
    len = 0;  // printable ASCII other than the quote and the backslash, copied as a run
    while (i + len < s.size() && plain(s[i + len])) ++len;
    if (len) {
      out.append(s, i, len);
      continue;
    }
    const uint32_t c = text::decode(s, i, len);
    switch (c) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      case '\b':
        out += "\\b";
        continue;
      case '\f':
        out += "\\f";
        continue;
      default:
        break;
    }
    if (c < 0x20) {
      append_hex4(out, c);
    } else if (ensure_ascii && c >= 0x7F) {
      if (c >= 0x10000) {
        const uint32_t v = c - 0x10000;
        append_hex4(out, 0xD800 | (v >> 10));
        append_hex4(out, 0xDC00 | (v & 0x3FF));
      } else {
        append_hex4(out, c);
      }
    } else {
      text::append_utf8(out, c);
    }
  }
  out += '"';
}

std::string float_json(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  return float_repr(d);
}

class Dumper {
 public:
  explicit Dumper(const JsonDumpOptions& o) : o_(o) {
    item_sep_ = o.item_separator ? *o.item_separator : (o.indent ? "," : ", ");
    key_sep_ = o.key_separator ? *o.key_separator : ": ";
  }

  void dump(std::string& out, const Value& v, int level) {
    check_built_size(out.size());
    switch (v.kind()) {
      case Value::Kind::kNone:
        out += "null";
        return;
      case Value::Kind::kBool:
        out += v.get_bool() ? "true" : "false";
        return;
      case Value::Kind::kInt:
        out += std::to_string(v.get_int());
        return;
      case Value::Kind::kFloat:
        out += float_json(v.get_float());
        return;
      case Value::Kind::kString:
        dump_string(out, v.str(), o_.ensure_ascii);
        return;
      case Value::Kind::kSeq:
        if (v.seq().kind == SeqKind::kList || v.seq().kind == SeqKind::kTuple) {
          dump_list(out, v.seq().items, level);
          return;
        }
        break;
      case Value::Kind::kDict:
        dump_dict(out, v.dict(), level);
        return;
      default:
        break;
    }
    eval_fail("Object of type " + v.type_name() + " is not JSON serializable");
  }

 private:
  void newline(std::string& out, int level) {
    if (!o_.indent) return;
    // The indent repeats once per level on every line: tojson(indent=N) multiplies the text.
    check_built_size(uint64_t{out.size()} + 1 + static_cast<uint64_t>(level) * o_.indent->size());
    out += '\n';
    for (int i = 0; i < level; ++i) out += *o_.indent;
  }

  // A separator (separators=(item, key) can be long strings).
  void separator(std::string& out, const std::string& sep) {
    check_built_size(uint64_t{out.size()} + sep.size());
    out += sep;
  }

  void dump_list(std::string& out, const std::vector<Value>& items, int level) {
    if (items.empty()) {
      out += "[]";
      return;
    }
    out += '[';
    newline(out, level + 1);
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) {
        separator(out, item_sep_);
        newline(out, level + 1);
      }
      dump(out, items[i], level + 1);
    }
    newline(out, level);
    out += ']';
  }

  std::string key_string(const Value& k) {
    switch (k.kind()) {
      case Value::Kind::kString:
        return k.str();
      case Value::Kind::kBool:
        return k.get_bool() ? "true" : "false";
      case Value::Kind::kInt:
        return std::to_string(k.get_int());
      case Value::Kind::kFloat:
        return float_json(k.get_float());
      case Value::Kind::kNone:
        return "null";
      default:
        eval_fail("keys must be str, int, float, bool or None, not " + k.type_name());
    }
  }

  void dump_dict(std::string& out, const Dict& d, int level) {
    if (d.size() == 0) {
      out += "{}";
      return;
    }
    std::vector<const std::pair<Value, Value>*> entries;
    for (const auto& e : d.entries()) entries.push_back(&e);
    if (o_.sort_keys)
      std::stable_sort(entries.begin(), entries.end(),
                       [](const auto* a, const auto* b) { return py_compare(a->first, b->first) < 0; });
    out += '{';
    newline(out, level + 1);
    bool first = true;
    for (const auto* e : entries) {
      if (!first) {
        separator(out, item_sep_);
        newline(out, level + 1);
      }
      first = false;
      dump_string(out, key_string(e->first), o_.ensure_ascii);
      separator(out, key_sep_);
      dump(out, e->second, level + 1);
    }
    newline(out, level);
    out += '}';
  }

  const JsonDumpOptions& o_;
  std::string item_sep_;
  std::string key_sep_;
};

}  // namespace

Value from_json(const nlohmann::ordered_json& j) {
  return from_json_at(j, 0);
}

std::string json_dumps(const Value& v, const JsonDumpOptions& options) {
  std::string out;
  Dumper(options).dump(out, v, 0);
  check_built_size(out.size());
  return out;
}

}  // namespace hftrain::tokenizer::jinja
