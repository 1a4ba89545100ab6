// Python `str` behaviour on UTF-8 text, for the Jinja interpreter: code points, Python's idea of
// whitespace (str.isspace, the `\s` of `re`), case mapping, printability (repr), line splitting.
//
// Limits: upper/lower/title map ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic (the one-to-
// one mappings plus ß -> SS); other scripts pass through unchanged, and Greek final sigma is not
// context-sensitive. `is_printable` knows the control, format, separator, surrogate and private-use
// ranges but not every unassigned code point.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/unicode.h"

namespace hftrain::tokenizer::jinja::text {

// The code point at s[i]; `len` gets its byte length. A byte that starts no valid sequence
// decodes as U+FFFD with length 1.
uint32_t decode(std::string_view s, size_t i, size_t& len);
using unicode::append_utf8;  // tokenizer/unicode.h
std::u32string to_u32(std::string_view s);
std::string to_utf8(std::u32string_view s);
bool is_ascii(std::string_view s);
// Number of code points.
size_t length(std::string_view s);
// Byte offset of code point `index` (s.size() when past the end).
size_t byte_offset(std::string_view s, size_t index);

bool is_space(uint32_t cp);      // str.isspace()
bool is_printable(uint32_t cp);  // str.isprintable() (see the limits above)
bool is_cased_upper(uint32_t cp);
bool is_cased_lower(uint32_t cp);
bool is_alpha(uint32_t cp);  // letters of the scripts the case tables know, plus other non-ASCII letters
bool is_digit(uint32_t cp);  // ASCII digits

std::string upper(std::string_view s);
std::string lower(std::string_view s);
std::string capitalize(std::string_view s);  // str.capitalize()
std::string py_title(std::string_view s);    // str.title()
std::string swapcase(std::string_view s);

// str.strip/lstrip/rstrip: whitespace when `chars` is null, else any code point of *chars.
std::string strip(std::string_view s, const std::string* chars, bool left, bool right);
// str.split(sep, maxsplit) / str.rsplit: whitespace splitting when `sep` is null.
std::vector<std::string> split(std::string_view s, const std::string* sep, int64_t maxsplit, bool from_right);
// str.splitlines(keepends=False).
std::vector<std::string> splitlines(std::string_view s);
// str.replace(old, new, count); count < 0 replaces all.
std::string replace(std::string_view s, std::string_view old_s, std::string_view new_s, int64_t count);
// str.count(sub) (non-overlapping; an empty `sub` counts length + 1).
int64_t count(std::string_view s, std::string_view sub);

}  // namespace hftrain::tokenizer::jinja::text
