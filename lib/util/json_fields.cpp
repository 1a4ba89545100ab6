#include "util/json_fields.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>

namespace hftrain::util {
using Json = nlohmann::json;

namespace {

// The shortest text that reads back as `v` (1e30, not 1.0000000000000000e+30).
std::string shortest(double v) {
  std::string text;
  for (int digits = 1; digits <= std::numeric_limits<double>::max_digits10; ++digits) {
    std::ostringstream attempt;
    attempt.precision(digits);
    attempt << v;
    text = attempt.str();
    if (!std::isfinite(v) || std::strtod(text.c_str(), nullptr) == v) break;
  }
  return text;
}

}  // namespace

void json_fail(const JsonPlace& at, const std::string& what, const std::string& hint) {
  const std::string message = *at.file + ": " + (at.path.empty() ? "" : at.path + " ") + what;
  const std::string& how = hint.empty() ? std::string(at.hint ? at.hint : "") : hint;
  switch (at.kind) {
    case ErrorKind::kUsage:
      throw UsageError(message, how);
    case ErrorKind::kConfig:
      throw ConfigError(message, how);
    case ErrorKind::kData:
      throw DataError(message, how);
    case ErrorKind::kCheckpoint:
      throw CheckpointError(message, how);
    case ErrorKind::kIo:
      throw IoError(message, how);
    case ErrorKind::kDistributed:
      throw DistributedError(message, how);
    case ErrorKind::kDiverged:
      throw DivergedError(message, how);
  }
  throw Error(at.kind, message, how);
}

const char* json_kind(const Json& v) {
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

std::string json_string(const Json& value, const JsonPlace& at) {
  if (!value.is_string()) json_fail(at, std::string("is ") + json_kind(value) + ", not a string");
  return value.get<std::string>();
}

bool json_bool(const Json& value, const JsonPlace& at) {
  if (!value.is_boolean()) json_fail(at, std::string("is ") + json_kind(value) + ", not true or false");
  return value.get<bool>();
}

int64_t json_int(const Json& value, const JsonPlace& at, int64_t min, int64_t max) {
  if (!value.is_number_integer()) json_fail(at, std::string("is ") + json_kind(value) + ", not an integer");
  if (value.is_number_unsigned() && value.get<uint64_t>() > static_cast<uint64_t>(max)) {
    json_fail(at, "is " + std::to_string(value.get<uint64_t>()) + ", above " + std::to_string(max));
  }
  const auto v = value.get<int64_t>();
  if (v < min || v > max) {
    json_fail(at, "is " + std::to_string(v) + ", outside [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  return v;
}

double json_number(const Json& value, const JsonPlace& at, double min, double max) {
  if (!value.is_number()) json_fail(at, std::string("is ") + json_kind(value) + ", not a number");
  const double v = value.get<double>();
  if (!std::isfinite(v) || v < min || v > max) {
    json_fail(at, "is " + shortest(v) + ", outside [" + shortest(min) + ", " + shortest(max) + "]");
  }
  return v;
}

JsonFields::JsonFields(const Json& object, JsonPlace place) : object_(object), place_(std::move(place)) {
  if (!object_.is_object()) json_fail(place_, std::string("is ") + json_kind(object_) + ", not an object");
}

const Json* JsonFields::find(const char* key) const {
  const auto it = object_.find(key);
  return it == object_.end() || it->is_null() ? nullptr : &*it;
}

const Json& JsonFields::require(const char* key) const {
  const Json* v = find(key);
  if (!v) fail(key, "is missing");
  return *v;
}

std::string JsonFields::string(const char* key, std::optional<std::string> fallback) const {
  if (!has(key) && fallback) return *fallback;
  return json_string(require(key), at(key));
}

std::optional<std::string> JsonFields::optional_string(const char* key) const {
  if (!has(key)) return std::nullopt;
  return json_string(require(key), at(key));
}

bool JsonFields::boolean(const char* key, std::optional<bool> fallback) const {
  if (!has(key) && fallback) return *fallback;
  return json_bool(require(key), at(key));
}

int64_t JsonFields::integer(const char* key, std::optional<int64_t> fallback) const {
  return integer(key, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), fallback);
}

int64_t JsonFields::integer(const char* key, int64_t min, int64_t max, std::optional<int64_t> fallback) const {
  if (!has(key) && fallback) return *fallback;
  return json_int(require(key), at(key), min, max);
}

int64_t JsonFields::positive(const char* key, std::optional<int64_t> fallback) const {
  if (!has(key) && fallback) return *fallback;
  const Json& v = require(key);
  // Parsed text gives unsigned numbers for non-negative ones, JSON built in memory signed ones.
  const bool fits = v.is_number_unsigned()
                        ? v.get<uint64_t>() >= 1 && v.get<uint64_t>() <= uint64_t{std::numeric_limits<int64_t>::max()}
                        : v.is_number_integer() && v.get<int64_t>() >= 1;
  if (!fits) {
    fail(key, "is " + (v.is_number() ? v.dump() : std::string(json_kind(v))) + ", not a positive integer");
  }
  return v.get<int64_t>();
}

double JsonFields::number(const char* key, std::optional<double> fallback) const {
  const double inf = std::numeric_limits<double>::infinity();
  return number(key, -inf, inf, fallback);
}

double JsonFields::number(const char* key, double min, double max, std::optional<double> fallback) const {
  if (!has(key) && fallback) return *fallback;
  return json_number(require(key), at(key), min, max);
}

std::optional<double> JsonFields::optional_number(const char* key, double min, double max) const {
  if (!has(key)) return std::nullopt;
  return json_number(require(key), at(key), min, max);
}

std::vector<double> JsonFields::positive_numbers(const char* key) const {
  const Json& list = array(key);
  std::vector<double> out;
  for (size_t i = 0; i < list.size(); ++i) {
    const double v =
        json_number(list[i], at(key)[i], -std::numeric_limits<double>::max(), std::numeric_limits<double>::max());
    if (!(v > 0)) json_fail(at(key)[i], "is " + shortest(v) + ", not a positive number");
    out.push_back(v);
  }
  return out;
}

const Json& JsonFields::array(const char* key) const {
  const Json& v = require(key);
  if (!v.is_array()) fail(key, std::string("is ") + json_kind(v) + ", not an array");
  return v;
}

JsonFields JsonFields::object(const char* key) const {
  return JsonFields(require(key), at(key));
}

}  // namespace hftrain::util
