// Jinja's number and string literals as jinja2 reads them: integers (decimal, 0b/0o/0x, `_`
// separators), floats (fraction and/or exponent, not right after a dot), and strings decoded as Python
// decodes them (.encode("ascii", "backslashreplace").decode("unicode-escape")).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace hftrain::tokenizer::jinja {

struct NumberLiteral {
  size_t end = 0;  // one past the literal
  bool is_float = false;
  bool overflow = false;  // an integer beyond int64
  int64_t int_value = 0;
  double float_value = 0;
};

// The number literal starting with the digit at src[pos].
NumberLiteral scan_number(std::string_view src, size_t pos);

struct LiteralError {
  std::string message;
  bool unsupported = false;  // valid Python, outside the subset (\N{...}, surrogates)
};

// The value of a string literal's body (without its quotes); throws LiteralError.
std::string unescape_string_literal(std::string_view raw);

}  // namespace hftrain::tokenizer::jinja
