// Jinja's number and string literals (see literals.h).
#include "tokenizer/jinja/literals.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "tokenizer/jinja/text.h"

namespace hftrain::tokenizer::jinja {
namespace {

int digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// `(\d+_)*\d+` in `base` from `at`; npos when no digit is there.
size_t scan_digits(std::string_view src, size_t at, int base = 10) {
  auto ok = [&](char c) { return digit_value(c) >= 0 && digit_value(c) < base; };
  if (at >= src.size() || !ok(src[at])) return std::string_view::npos;
  size_t p = at;
  while (p < src.size()) {
    if (ok(src[p])) {
      ++p;
    } else if (src[p] == '_' && p + 1 < src.size() && ok(src[p + 1])) {
      p += 2;
    } else {
      break;
    }
  }
  return p;
}

std::string without_underscores(std::string_view s) {
  std::string out;
  for (char c : s)
    if (c != '_') out += c;
  return out;
}

// Float: digits, then (fraction? exponent | fraction); never right after a dot (`x.1.2`).
size_t scan_float(std::string_view src, size_t pos) {
  if (pos > 0 && src[pos - 1] == '.') return std::string_view::npos;
  const size_t int_end = scan_digits(src, pos);
  auto exponent_at = [&](size_t p) -> size_t {
    if (p >= src.size() || (src[p] != 'e' && src[p] != 'E')) return std::string_view::npos;
    ++p;
    if (p < src.size() && (src[p] == '+' || src[p] == '-')) ++p;
    return scan_digits(src, p);
  };
  size_t frac_end = std::string_view::npos;
  if (int_end < src.size() && src[int_end] == '.') frac_end = scan_digits(src, int_end + 1);
  size_t end = std::string_view::npos;
  if (frac_end != std::string_view::npos) end = exponent_at(frac_end);
  if (end == std::string_view::npos) end = exponent_at(int_end);
  if (end == std::string_view::npos) end = frac_end;
  return end;
}

}  // namespace

NumberLiteral scan_number(std::string_view src, size_t pos) {
  NumberLiteral n;
  if (const size_t end = scan_float(src, pos); end != std::string_view::npos) {
    n.end = end;
    n.is_float = true;
    n.float_value = std::strtod(without_underscores(src.substr(pos, end - pos)).c_str(), nullptr);
    return n;
  }
  size_t end = std::string_view::npos;
  int base = 10;
  if (src[pos] == '0' && pos + 1 < src.size()) {
    const char p = static_cast<char>(src[pos + 1] | 0x20);
    base = p == 'b' ? 2 : p == 'o' ? 8 : p == 'x' ? 16 : 10;
    if (base != 10) {
      size_t q = pos + 2;
      if (q < src.size() && src[q] == '_') ++q;
      end = scan_digits(src, q, base);
      if (end == std::string_view::npos) base = 10;
    }
  }
  if (base == 10) {
    if (src[pos] == '0') {  // `0(_?0)*`: a leading zero takes only zeros
      end = pos + 1;
      while (end < src.size() && (src[end] == '0' || (src[end] == '_' && end + 1 < src.size() && src[end + 1] == '0')))
        end += src[end] == '_' ? 2u : 1u;
    } else {
      end = scan_digits(src, pos);
    }
  }
  n.end = end;
  const std::string digits =
      without_underscores(src.substr(base == 10 ? pos : pos + 2, end - pos - (base == 10 ? 0 : 2)));
  errno = 0;
  const unsigned long long v = std::strtoull(digits.c_str(), nullptr, base);
  n.overflow = errno == ERANGE || v > static_cast<unsigned long long>(INT64_MAX);
  n.int_value = static_cast<int64_t>(v);
  return n;
}

std::string unescape_string_literal(std::string_view raw) {
  // Non-ASCII characters become \xNN, \uNNNN, \UNNNNNNNN first, exactly as Python's backslashreplace.
  std::string ascii;
  for (size_t i = 0, len = 0; i < raw.size(); i += len) {
    const uint32_t cp = text::decode(raw, i, len);
    if (cp < 0x80) {
      ascii += static_cast<char>(cp);
      continue;
    }
    char buf[16];
    std::snprintf(buf, sizeof(buf), cp <= 0xFF ? "\\x%02x" : cp <= 0xFFFF ? "\\u%04x" : "\\U%08x", cp);
    ascii += buf;
  }
  auto read_hex = [&](size_t& i, int n, const char* what) -> uint32_t {
    uint32_t v = 0;
    for (int k = 0; k < n; ++k, ++i) {
      if (i >= ascii.size() || digit_value(ascii[i]) < 0)
        throw LiteralError{std::string("truncated ") + what + " escape"};
      v = v * 16 + static_cast<uint32_t>(digit_value(ascii[i]));
    }
    return v;
  };
  std::string out;
  for (size_t i = 0; i < ascii.size();) {
    const char c = ascii[i++];
    if (c != '\\') {
      out += c;
      continue;
    }
    if (i >= ascii.size()) throw LiteralError{"\\ at end of string"};
    const char e = ascii[i++];
    uint32_t cp = 0;
    switch (e) {
      case '\n':
        continue;  // line continuation
      case '\\':
        out += '\\';
        continue;
      case '\'':
        out += '\'';
        continue;
      case '"':
        out += '"';
        continue;
      case 'a':
        out += '\a';
        continue;
      case 'b':
        out += '\b';
        continue;
      case 'f':
        out += '\f';
        continue;
      case 'n':
        out += '\n';
        continue;
      case 'r':
        out += '\r';
        continue;
      case 't':
        out += '\t';
        continue;
      case 'v':
        out += '\v';
        continue;
      case 'x':
        cp = read_hex(i, 2, "\\xXX");
        break;
      case 'u':
        cp = read_hex(i, 4, "\\uXXXX");
        break;
      case 'U':
        cp = read_hex(i, 8, "\\UXXXXXXXX");
        break;
      case 'N':
        throw LiteralError{"\\N{...} escapes in string literals are not supported", true};
      default:
        if (e >= '0' && e <= '7') {  // up to three octal digits
          cp = static_cast<uint32_t>(e - '0');
          for (int k = 0; k < 2 && i < ascii.size() && ascii[i] >= '0' && ascii[i] <= '7'; ++k)
            cp = cp * 8 + static_cast<uint32_t>(ascii[i++] - '0');
          break;
        }
        out += '\\';  // an unknown escape stays as written
        out += e;
        continue;
    }
    if (cp > 0x10FFFF) throw LiteralError{"illegal Unicode character"};
    if (cp >= 0xD800 && cp <= 0xDFFF)
      throw LiteralError{"surrogate code points in string literals are not supported", true};
    text::append_utf8(out, cp);
  }
  return out;
}

}  // namespace hftrain::tokenizer::jinja
