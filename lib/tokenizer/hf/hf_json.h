// Reading a Hugging Face tokenizer.json: typed access to its members (util/json_fields.h) with errors
// that name the file and the JSON path of the offending key ("pre_tokenizer.pretokenizers[1].behavior"),
// so that every malformed or unsupported piece is a util::DataError, never a library exception.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "util/json_fields.h"

namespace hftrain::tokenizer::hf {

using Json = nlohmann::json;

// Where in which file: the JSON path of a value, failing as a DataError with the tokenizer's hint.
using Where = util::JsonPlace;
// The top of the tokenizer.json that messages call `label` ("tokenizer t.json"; not copied: it
// outlives the reading).
Where top_of(const std::string& label);

// Throws DataError "tokenizer <file>: <path> <what>" with the hint.
[[noreturn]] void fail(const Where& where, const std::string& what, const std::string& hint = "");
// Throws DataError "<path> is <value>, which hftrain does not support" listing what it supports.
[[noreturn]] void unsupported(const Where& where, const std::string& value, const std::string& supported);

// A short, printable rendering of a string from the file for messages (never the whole file:
// untrusted JSON stays out of messages).
std::string shown(const std::string& text);

// The member `key` of `obj`; nullptr when it is absent or null. Fails when obj is not an object.
const Json* member(const Json& obj, const char* key, const Where& where);

std::string get_string(const Json& obj, const char* key, const Where& where,
                       std::optional<std::string> fallback = std::nullopt);
std::optional<std::string> get_optional_string(const Json& obj, const char* key, const Where& where);
bool get_bool(const Json& obj, const char* key, const Where& where, bool fallback);
int64_t get_int(const Json& obj, const char* key, const Where& where, int64_t min, int64_t max,
                std::optional<int64_t> fallback = std::nullopt);
const Json& get_array(const Json& obj, const char* key, const Where& where);
const Json& get_object(const Json& obj, const char* key, const Where& where);
// A value that must itself be a string / an integer in [min, max].
std::string as_string(const Json& value, const Where& where);
int64_t as_int(const Json& value, const Where& where, int64_t min, int64_t max);
// The one Unicode character a string member holds (Metaspace's replacement, Strip's content).
char32_t get_char(const Json& obj, const char* key, const Where& where, char32_t fallback);

// The "type" of a component object. Fails too when Sequences nest absurdly deep (the parsers
// recurse).
std::string type_of(const Json& obj, const Where& where);

// A Split / Replace pattern: {"String": s} or {"Regex": r}.
struct PatternSpec {
  bool regex = false;
  std::string text;
};
PatternSpec get_pattern(const Json& obj, const char* key, const Where& where);

}  // namespace hftrain::tokenizer::hf
