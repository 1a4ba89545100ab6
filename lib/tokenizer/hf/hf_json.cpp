#include "tokenizer/hf/hf_json.h"

#include "tokenizer/unicode.h"
#include "util/error.h"

namespace hftrain::tokenizer::hf {
namespace {

constexpr const char* kHint = "is the tokenizer.json damaged, or written by a newer tokenizers?";

}  // namespace

Where top_of(const std::string& label) {
  return util::JsonPlace::top(label, util::ErrorKind::kData, kHint);
}

void fail(const Where& where, const std::string& what, const std::string& hint) {
  util::json_fail(where, what, hint);
}

void unsupported(const Where& where, const std::string& value, const std::string& supported) {
  fail(where, "is " + shown(value) + ", which hftrain does not support", "hftrain supports " + supported);
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
  return util::JsonFields(obj, where).find(key);
}

std::string as_string(const Json& value, const Where& where) {
  return util::json_string(value, where);
}

int64_t as_int(const Json& value, const Where& where, int64_t min, int64_t max) {
  return util::json_int(value, where, min, max);
}

std::string get_string(const Json& obj, const char* key, const Where& where, std::optional<std::string> fallback) {
  return util::JsonFields(obj, where).string(key, std::move(fallback));
}

std::optional<std::string> get_optional_string(const Json& obj, const char* key, const Where& where) {
  return util::JsonFields(obj, where).optional_string(key);
}

bool get_bool(const Json& obj, const char* key, const Where& where, bool fallback) {
  return util::JsonFields(obj, where).boolean(key, fallback);
}

int64_t get_int(const Json& obj, const char* key, const Where& where, int64_t min, int64_t max,
                std::optional<int64_t> fallback) {
  return util::JsonFields(obj, where).integer(key, min, max, fallback);
}

const Json& get_array(const Json& obj, const char* key, const Where& where) {
  return util::JsonFields(obj, where).array(key);
}

const Json& get_object(const Json& obj, const char* key, const Where& where) {
  return util::JsonFields(obj, where).object(key).json();
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
    fail(Where{where.file, where.path.substr(0, 60) + "...", where.kind, where.hint}, "nests too deeply");
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
