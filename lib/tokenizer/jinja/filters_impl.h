// The filter registry's internals: each filters_*.cpp file contributes a table of (name, function).
#pragma once

#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/jinja/value.h"

namespace hftrain::tokenizer::jinja::detail {

using FilterFn = Value (*)(Interpreter& interp, const Value& input, CallArgs& args);
using FilterTable = std::vector<std::pair<std::string_view, FilterFn>>;

const FilterTable& text_filters();      // filters_text.cpp
const FilterTable& sequence_filters();  // filters_seq.cpp
const FilterTable& other_filters();     // filters.cpp

// jinja2's make_attrgetter: "a.b.0" looks up a, then b, then item 0 with getitem rules; `fallback`
// (when not none) replaces an undefined result; `lower` lowercases a string result (ignore_case).
class AttrGetter {
 public:
  AttrGetter(const Value& attribute, bool lower, Value fallback = Value::none());
  Value operator()(const Value& item) const;

 private:
  std::vector<Value> parts_;
  bool lower_;
  Value fallback_;
};

}  // namespace hftrain::tokenizer::jinja::detail
