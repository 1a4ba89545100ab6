#include "tokenizer/hf/hf_json.h"

#include "tokenizer/unicode.h"
#include "util/error.h"

namespace hftrain::tokenizer::hf {
namespace {

const char* kind_name(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::object:
      return "an object";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::boolean:
      return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return "an integer";
    case Json::value_t::number_float:
      return "a number";
    default:
      return "an unexpected value";
  }
}

}  // namespace

void fail(const Where& where, const std::string& what, const std::string& hint) {
  const std::string at = where.path.empty() ? "" : where.path + " ";
  throw util::DataError(
      "tokenizer " + *where.file + ": " + at + what,
      hint.empty() ? "is the tokenizer.json damaged, or written by a newer tokenizers?" : hint);
}

void unsupported(const Where& where, const std::string& value, const std::string& supported) {
  fail(where, "is " + shown(value) + ", which hftrain does not support",
       "hftrain supports " + supported);
}

std::string shown(const std::string& text) {
  constexpr size_t kMax = 60;
  std::string out = "'";
  size_t i = 0;
  while (i < text.size() && i < kMax) {
    size_t len = 1;
    const uint32_t cp = unicode::decode(text, i, len);
    if (cp < 0x20 || cp == 0x7F) {
      static const char* kHex = "0123456789abcdef";
      out += "\\x";
      out += kHex[cp >> 4];
      out += kHex[cp & 15];
    } else {
      out.append(text, i, len);
    }
    i += len;
  }
  if (i < text.size()) out += "...";
  return out + "'";
}

const Json* member(const Json& obj, const char* key, const Where& where) {
  if (!obj.is_object()) fail(where, std::string("is ") + kind_name(obj) + ", not an object");
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string as_string(const Json& value, const Where& where) {
  if (!value.is_string()) fail(where, std::string("is ") + kind_name(value) + ", not a string");
  return value.get<std::string>();
}

int64_t as_int(const Json& value, const Where& where, int64_t min, int64_t max) {
  if (!value.is_number_integer())
    fail(where, std::string("is ") + kind_name(value) + ", not an integer");
  if (value.is_number_unsigned() && value.get<uint64_t>() > static_cast<uint64_t>(max)) {
    fail(where, "is " + std::to_string(value.get<uint64_t>()) + ", above " + std::to_string(max));
  }
  const auto v = value.get<int64_t>();
  if (v < min || v > max) {
    fail(where, "is " + std::to_string(v) + ", outside [" + std::to_string(min) + ", " +
                    std::to_string(max) + "]");
  }
  return v;
}

std::string get_string(const Json& obj, const char* key, const Where& where,
                       std::optional<std::string> fallback) {
  const Json* v = member(obj, key, where);
  if (!v) {
    if (fallback) return *fallback;
    fail(where / key, "is missing");
  }
  return as_string(*v, where / key);
}

std::optional<std::string> get_optional_string(const Json& obj, const char* key,
                                               const Where& where) {
  const Json* v = member(obj, key, where);
  if (!v) return std::nullopt;
  return as_string(*v, where / key);
}

bool get_bool(const Json& obj, const char* key, const Where& where, bool fallback) {
  const Json* v = member(obj, key, where);
  if (!v) return fallback;
  if (!v->is_boolean())
    fail(where / key, std::string("is ") + kind_name(*v) + ", not true or false");
  return v->get<bool>();
}

int64_t get_int(const Json& obj, const char* key, const Where& where, int64_t min, int64_t max,
                std::optional<int64_t> fallback) {
  const Json* v = member(obj, key, where);
  if (!v) {
    if (fallback) return *fallback;
    fail(where / key, "is missing");
  }
  return as_int(*v, where / key, min, max);
}

const Json& get_array(const Json& obj, const char* key, const Where& where) {
  const Json* v = member(obj, key, where);
  if (!v) fail(where / key, "is missing");
  if (!v->is_array()) fail(where / key, std::string("is ") + kind_name(*v) + ", not an array");
  return *v;
}

const Json& get_object(const Json& obj, const char* key, const Where& where) {
  const Json* v = member(obj, key, where);
  if (!v) fail(where / key, "is missing");
  if (!v->is_object()) fail(where / key, std::string("is ") + kind_name(*v) + ", not an object");
  return *v;
}

char32_t get_char(const Json& obj, const char* key, const Where& where, char32_t fallback) {
  const Json* v = member(obj, key, where);
  if (!v) return fallback;
  const std::u32string cps = unicode::to_code_points(as_string(*v, where / key));
  if (cps.size() != 1) fail(where / key, "must be exactly one character");
  return cps[0];
}

std::string type_of(const Json& obj, const Where& where) {
  constexpr size_t kMaxPath = 2000;  // about a hundred nested Sequences
  if (where.path.size() > kMaxPath)
    fail(Where{where.file, where.path.substr(0, 60) + "..."}, "nests too deeply");
  return get_string(obj, "type", where);
}

PatternSpec get_pattern(const Json& obj, const char* key, const Where& where) {
  const Json& p = get_object(obj, key, where);
  const Where at = where / key;
  if (const Json* s = member(p, "String", at)) return {false, as_string(*s, at / "String")};
  if (const Json* r = member(p, "Regex", at)) return {true, as_string(*r, at / "Regex")};
  fail(at, "is neither {\"String\": ...} nor {\"Regex\": ...}");
}

}  // namespace hftrain::tokenizer::hf
