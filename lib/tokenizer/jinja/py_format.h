// Python's str() and repr() of interpreter values, as jinja2 prints them: floats as float.__repr__
// (shortest round trip: 1.0, 0.1, 1e-05, 1e+16), strings quoted as Python does, lists, tuples and
// dicts in Python syntax (['a', 1], (1,), {'k': None}), None/True/False.
#pragma once

#include <string>
#include <string_view>

#include "tokenizer/jinja/value.h"

namespace hftrain::tokenizer::jinja {

std::string float_repr(double d);
std::string string_repr(std::string_view s);
// repr(v); throws EvalError for a value nesting deeper than kMaxValueDepth (namespaces included) or
// printing longer than kMaxBuiltSize.
std::string repr(const Value& v);
// jinja2's Namespace.__repr__.
std::string namespace_repr(const Namespace& ns);
// str(v): the string itself for a string, "" for undefined, repr otherwise.
std::string to_str(const Value& v);
// What jinja2 calls object_type_repr ("dict object", "None", ...), for error messages.
std::string object_type_repr(const Value& v);

}  // namespace hftrain::tokenizer::jinja
