// JSON in and out of the interpreter: the render context (an nlohmann::ordered_json, so that objects
// keep their key order as Python's json.load does) becomes values, and the `tojson` filter writes
// values as transformers' override does: json.dumps(x, ensure_ascii=False, indent=..., separators=...,
// sort_keys=...).
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "tokenizer/jinja/value.h"

namespace hftrain::tokenizer::jinja {

// JSON null/bool/int/float/string/array/object -> None/bool/int/float/str/list/dict. Throws
// EvalError for an integer outside int64 and for nesting deeper than kMaxValueDepth.
Value from_json(const nlohmann::ordered_json& j);

struct JsonDumpOptions {
  bool ensure_ascii = false;
  std::optional<std::string> indent;  // json.dumps' indent, already turned into its string
  std::optional<std::string> item_separator;
  std::optional<std::string> key_separator;
  bool sort_keys = false;
};

// Python's json.dumps; throws EvalError for values JSON cannot hold ("Object of type Undefined is not
// JSON serializable").
std::string json_dumps(const Value& v, const JsonDumpOptions& options);

}  // namespace hftrain::tokenizer::jinja
