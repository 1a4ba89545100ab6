// Python's operators on interpreter values, as jinja2 applies them: arithmetic (+ - * / // % **
// with Python's int/float rules; ints are 64-bit and overflow is an error), ordering comparisons
// (numbers, strings by code point, lists and tuples lexicographically), `in`, len(), iteration.
// Any operation on an undefined value raises that value's message, as jinja2's Undefined does.
// All throw EvalError.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/jinja/value.h"

namespace hftrain::tokenizer::jinja {

enum class BinaryOp : uint8_t { kAdd, kSub, kMul, kDiv, kFloorDiv, kMod, kPow };
enum class CompareOp : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe, kIn, kNotIn };

// Longest string (bytes) and list (items) an operation may build, so that `'a' * 10**12` fails
// cleanly instead of exhausting memory.
inline constexpr size_t kMaxBuiltSize = size_t{256} << 20;
inline constexpr size_t kMaxBuiltItems = size_t{16} << 20;
// Most items a string is taken apart into (its characters, split's parts): each is a value of its
// own, so a long string's pieces would take a hundred times its bytes.
inline constexpr size_t kMaxStringItems = size_t{1} << 20;
// Throws EvalError when taking a string apart would give more than kMaxStringItems pieces.
void check_string_items(uint64_t pieces, const char* what);

// Throws EvalError when a string of `bytes` would exceed kMaxBuiltSize.
void check_built_size(uint64_t bytes);
// str.replace, refusing results over kMaxBuiltSize.
std::string bounded_replace(std::string_view s, std::string_view old_s, std::string_view new_s, int64_t count);

[[noreturn]] void fail_undefined(const Value& v);
// The error for an int result beyond 64 bits (Python's ints are unbounded; these are not).
[[noreturn]] void fail_int_overflow();
// Throws the undefined's error when `v` is undefined.
inline void require_defined(const Value& v) {
  if (v.is_undefined()) fail_undefined(v);
}

Value binary_op(BinaryOp op, const Value& a, const Value& b);
Value negate(const Value& v);
Value unary_plus(const Value& v);
bool compare(CompareOp op, const Value& a, const Value& b);
// -1, 0, 1 by Python's `<` (for sorting); throws when the values are unorderable.
int py_compare(const Value& a, const Value& b);
bool contains(const Value& container, const Value& item);
// list(v): the items of a list/tuple, the keys of a dict, the characters of a string, what is left of
// a generator (consuming it); nothing for undefined.
std::vector<Value> iterate(const Value& v);
// len(v).
int64_t length(const Value& v);
// Python int(x) for an integral value, with bool as 0/1.
int64_t checked_int(const Value& v, const char* what);

}  // namespace hftrain::tokenizer::jinja
