// Binding a builtin's call arguments to its Python signature.
#include "tokenizer/jinja/args.h"

#include "tokenizer/jinja/error.h"
#include "tokenizer/jinja/operators.h"

namespace hftrain::tokenizer::jinja {

BoundArgs::BoundArgs(std::string_view function, const CallArgs& args, std::initializer_list<std::string_view> params)
    : function_(function), names_(params), values_(params.size()) {
  if (args.positional.size() > params.size())
    eval_fail(function_ + "() takes at most " + std::to_string(params.size()) + " argument(s) (" +
              std::to_string(args.positional.size()) + " given)");
  for (size_t i = 0; i < args.positional.size(); ++i) values_[i] = args.positional[i];
  for (const auto& [key, value] : args.keyword) {
    size_t i = 0;
    while (i < names_.size() && names_[i] != key) ++i;
    if (i == names_.size()) eval_fail(function_ + "() got an unexpected keyword argument '" + key + "'");
    if (values_[i]) eval_fail(function_ + "() got multiple values for argument '" + key + "'");
    values_[i] = value;
  }
}

const Value& BoundArgs::get(size_t i) const {
  if (!values_[i]) eval_fail(function_ + "() missing required argument '" + std::string(names_[i]) + "'");
  return *values_[i];
}

int64_t BoundArgs::int_or(size_t i, int64_t fallback) const {
  if (!has(i)) return fallback;
  require_defined(*values_[i]);
  if (!values_[i]->is_integral())
    eval_fail(function_ + "() argument '" + std::string(names_[i]) + "' must be an integer, not '" +
              values_[i]->type_name() + "'");
  return values_[i]->get_int();
}

bool BoundArgs::bool_or(size_t i, bool fallback) const {
  return has(i) ? truthy(*values_[i]) : fallback;
}

const std::string* BoundArgs::str_or_null(size_t i) const {
  if (!has(i) || values_[i]->is_none()) return nullptr;
  require_defined(*values_[i]);
  if (!values_[i]->is_string())
    eval_fail(function_ + "() argument '" + std::string(names_[i]) + "' must be a string, not '" +
              values_[i]->type_name() + "'");
  return &values_[i]->str();
}

}  // namespace hftrain::tokenizer::jinja
