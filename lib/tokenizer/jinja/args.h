// Binds a builtin's call arguments to its Python signature: positional then keyword arguments by
// parameter name, refusing unknown keywords and surplus positional arguments as Python would.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/jinja/value.h"

namespace hftrain::tokenizer::jinja {

class BoundArgs {
 public:
  // `function` names the builtin in errors; `params` are its parameter names in order.
  BoundArgs(std::string_view function, const CallArgs& args, std::initializer_list<std::string_view> params);

  bool has(size_t i) const { return values_[i].has_value(); }
  const Value& get(size_t i) const;  // throws when missing ("missing required argument")
  Value get_or(size_t i, Value fallback) const { return has(i) ? *values_[i] : std::move(fallback); }
  int64_t int_or(size_t i, int64_t fallback) const;
  bool bool_or(size_t i, bool fallback) const;  // Python truthiness
  // A string argument, or null when absent or None.
  const std::string* str_or_null(size_t i) const;

 private:
  std::string function_;
  std::vector<std::string_view> names_;
  std::vector<std::optional<Value>> values_;
};

}  // namespace hftrain::tokenizer::jinja
