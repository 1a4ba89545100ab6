// Typed reading of JSON that hftrain did not write itself or cannot trust (a model's config.json, a
// tokenizer.json, a checkpoint's state files). Every accessor checks the value's type and range and,
// when it is wrong, throws one util::Error of the place's kind: "<file>: <path> <what>" with a hint,
// never the JSON library's words. The path names nested values as "rope_scaling.factor",
// "model.vocab.'a'" or "post_processor.ids[0]".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/error.h"

namespace hftrain::util {

// Where a value sits: the file as messages name it (not owned: it outlives the reading), the path
// inside it ("" at the top), and the kind of error and the hint its failures carry.
struct JsonPlace {
  const std::string* file;
  std::string path;
  ErrorKind kind = ErrorKind::kData;
  const char* hint = "";

  // The top of `file` (not copied: it outlives the reading), failing as `kind` with `hint`.
  static JsonPlace top(const std::string& file, ErrorKind kind, const char* hint) { return {&file, "", kind, hint}; }

  JsonPlace operator/(const std::string& key) const {
    return {file, path.empty() ? key : path + "." + key, kind, hint};
  }
  JsonPlace operator[](size_t index) const { return {file, path + "[" + std::to_string(index) + "]", kind, hint}; }
};

// Throws the place's error: "<file>: <path> <what>"; `hint` replaces the place's hint when not empty.
[[noreturn]] void json_fail(const JsonPlace& at, const std::string& what, const std::string& hint = "");
// "an object", "an array", "a string", "a boolean", "an integer", "a number", "null".
const char* json_kind(const nlohmann::json& value);

// A value that must be a string, a boolean, an integer in [min, max], or a number in [min, max].
std::string json_string(const nlohmann::json& value, const JsonPlace& at);
bool json_bool(const nlohmann::json& value, const JsonPlace& at);
int64_t json_int(const nlohmann::json& value, const JsonPlace& at, int64_t min, int64_t max);
double json_number(const nlohmann::json& value, const JsonPlace& at, double min, double max);

// The members of one JSON object, read by key. A member that is null counts as absent; a fallback is
// returned for an absent member, and without one the member is required ("is missing").
class JsonFields {
 public:
  // Fails when `object` is not a JSON object.
  JsonFields(const nlohmann::json& object, JsonPlace place);

  const nlohmann::json& json() const { return object_; }
  const JsonPlace& place() const { return place_; }
  JsonPlace at(const std::string& key) const { return place_ / key; }

  // The member, or nullptr when absent or null.
  const nlohmann::json* find(const char* key) const;
  bool has(const char* key) const { return find(key) != nullptr; }
  // The member; fails when absent or null.
  const nlohmann::json& require(const char* key) const;

  [[noreturn]] void fail(const std::string& what, const std::string& hint = "") const { json_fail(place_, what, hint); }
  [[noreturn]] void fail(const char* key, const std::string& what, const std::string& hint = "") const {
    json_fail(at(key), what, hint);
  }

  std::string string(const char* key, std::optional<std::string> fallback = std::nullopt) const;
  std::optional<std::string> optional_string(const char* key) const;
  bool boolean(const char* key, std::optional<bool> fallback = std::nullopt) const;
  // Any integer, or one in [min, max].
  int64_t integer(const char* key, std::optional<int64_t> fallback = std::nullopt) const;
  int64_t integer(const char* key, int64_t min, int64_t max, std::optional<int64_t> fallback = std::nullopt) const;
  // An integer of at least 1.
  int64_t positive(const char* key, std::optional<int64_t> fallback = std::nullopt) const;
  // Any number, or one in [min, max].
  double number(const char* key, std::optional<double> fallback = std::nullopt) const;
  double number(const char* key, double min, double max, std::optional<double> fallback = std::nullopt) const;
  std::optional<double> optional_number(const char* key, double min, double max) const;
  // A list of numbers greater than 0.
  std::vector<double> positive_numbers(const char* key) const;
  const nlohmann::json& array(const char* key) const;
  JsonFields object(const char* key) const;

 private:
  const nlohmann::json& object_;
  JsonPlace place_;
};

}  // namespace hftrain::util
