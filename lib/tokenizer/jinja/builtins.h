// What templates can call: filters (`x | trim`), tests (`x is defined`), methods of values
// (`s.strip()`, `d.items()`), attribute and item access with jinja2's sandbox rules, and the globals
// transformers provides. Each name outside the supported set is refused: unknown filters and tests at
// parse time, unsupported methods when called.
//
// Filters: abs, attr, batch, capitalize, center, count, d/default, dictsort, e/escape, first, float,
// forceescape, indent, int, items, join, last, length, list, lower, map, max, min, reject,
// rejectattr, replace, reverse, round, safe, select, selectattr, sort, string, sum, title, tojson,
// trim, unique, upper, wordcount.
// Tests: boolean, callable, defined, divisibleby, eq/equalto/==, escaped, even, false, filter, float,
// ge/>=, gt/greaterthan/>, in, integer, iterable, le/<=, lower, lt/lessthan/<, mapping, ne/!=, none,
// number, odd, sameas, sequence, string, test, true, undefined, upper.
// Methods: str: capitalize, center, count, endswith, find, format ({}, {0}, {name}; no format
// specs), index, isalnum, isalpha, isdigit, islower, isspace, isupper, join, ljust, lower, lstrip,
// partition, removeprefix, removesuffix, replace, rfind, rindex, rjust, rpartition, rsplit, rstrip,
// split, splitlines, startswith, strip, swapcase, title, upper, zfill; dict: get, items, keys,
// values, copy; list/tuple: count, index, copy; numbers: real, imag.
// Mutating methods (append, update, pop, ...) are refused as jinja2's ImmutableSandboxedEnvironment
// refuses them.
// Globals: range, dict, namespace, raise_exception, strftime_now.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "tokenizer/jinja/value.h"

namespace hftrain::tokenizer::jinja {

bool is_known_filter(std::string_view name);
bool is_known_test(std::string_view name);

Value apply_filter(Interpreter& interp, const std::string& name, const Value& input, CallArgs& args);
bool apply_test(Interpreter& interp, const std::string& name, const Value& input, CallArgs& args);

// jinja2's sandboxed getattr (`x.name`: a method of the value, else the item `name`) and getitem
// (`x[key]`: the item, else for a string key the method); undefined when neither exists.
Value get_attr(const Value& obj, std::string_view name);
Value get_item(const Value& obj, const Value& key);
// `x[start:stop:step]` for strings, lists and tuples (each bound may be none).
Value get_slice(const Value& obj, const Value& start, const Value& stop, const Value& step);

// The method `name` of `self` as a value (bound method), or nullopt when `self` has no such method.
std::optional<Value> find_method(const Value& self, std::string_view name);
Value call_method(Interpreter& interp, const Value& self, const std::string& name, CallArgs& args);

// The globals; immutable, shared by every render.
const std::unordered_map<std::string, Value>& builtin_globals();

}  // namespace hftrain::tokenizer::jinja
