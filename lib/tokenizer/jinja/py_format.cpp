// Python's str() and repr() of interpreter values.
#include "tokenizer/jinja/py_format.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "tokenizer/jinja/error.h"
#include "tokenizer/jinja/text.h"

namespace hftrain::tokenizer::jinja {
namespace {

void append_hex(std::string& out, uint32_t v, int digits) {
  static const char* kHex = "0123456789abcdef";
  for (int shift = (digits - 1) * 4; shift >= 0; shift -= 4) out += kHex[(v >> shift) & 0xF];
}

void repr_into(std::string& out, const Value& v, int depth);

void seq_into(std::string& out, const std::vector<Value>& items, const char* open, const char* close, bool tuple,
              int depth) {
  out += open;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ", ";
    repr_into(out, items[i], depth + 1);
  }
  if (tuple && items.size() == 1) out += ',';
  out += close;
}

void repr_into(std::string& out, const Value& v, int depth) {
  if (depth > static_cast<int>(kMaxValueDepth)) eval_fail("value nests too deep to print");
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      out += "Undefined";
      return;
    case Value::Kind::kNone:
      out += "None";
      return;
    case Value::Kind::kBool:
      out += v.get_bool() ? "True" : "False";
      return;
    case Value::Kind::kInt:
      out += std::to_string(v.get_int());
      return;
    case Value::Kind::kFloat:
      out += float_repr(v.get_float());
      return;
    case Value::Kind::kString:
      out += string_repr(v.str());
      return;
    case Value::Kind::kSeq: {
      const auto& s = v.seq();
      switch (s.kind) {
        case SeqKind::kList:
          seq_into(out, s.items, "[", "]", false, depth);
          return;
        case SeqKind::kTuple:
          seq_into(out, s.items, "(", ")", true, depth);
          return;
        case SeqKind::kDictKeys:
          seq_into(out, s.items, "dict_keys([", "])", false, depth);
          return;
        case SeqKind::kDictValues:
          seq_into(out, s.items, "dict_values([", "])", false, depth);
          return;
        case SeqKind::kDictItems:
          seq_into(out, s.items, "dict_items([", "])", false, depth);
          return;
      }
      return;
    }
    case Value::Kind::kDict: {
      out += '{';
      bool first = true;
      for (const auto& [k, val] : v.dict().entries()) {
        if (!first) out += ", ";
        first = false;
        repr_into(out, k, depth + 1);
        out += ": ";
        repr_into(out, val, depth + 1);
      }
      out += '}';
      return;
    }
    case Value::Kind::kIterator:
      out += "<" + v.iterator().type_name + " object>";
      return;
    case Value::Kind::kCallable:
      out += v.callable().repr();
      return;
    case Value::Kind::kObject:
      out += v.object().repr();
      return;
  }
}

}  // namespace

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  const std::string sci(buf, res.ptr);
  // sci is "[-]D[.DDD]e[+-]XX": the shortest digits that round-trip.
  size_t i = 0;
  std::string out;
  if (sci[0] == '-') {
    out += '-';
    i = 1;
  }
  const size_t e = sci.find('e');
  std::string digits;
  for (size_t k = i; k < e; ++k)
    if (sci[k] != '.') digits += sci[k];
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  const int exp10 = std::stoi(sci.substr(e + 1));
  const int decpt = exp10 + 1;  // value = 0.DIGITS * 10^decpt
  const int n = static_cast<int>(digits.size());
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out += "0." + std::string(static_cast<size_t>(-decpt), '0') + digits;
    } else if (decpt >= n) {
      out += digits + std::string(static_cast<size_t>(decpt - n), '0') + ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(decpt)) + "." + digits.substr(static_cast<size_t>(decpt));
    }
    return out;
  }
  out += digits[0];
  if (n > 1) out += "." + digits.substr(1);
  char ebuf[16];
  std::snprintf(ebuf, sizeof(ebuf), "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
  out += ebuf;
  return out;
}

std::string string_repr(std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (size_t i = 0, len = 0; i < s.size(); i += len) {
    const uint32_t c = text::decode(s, i, len);
    if (c == static_cast<uint32_t>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7F) {
      out += "\\x";
      append_hex(out, c, 2);
    } else if (c < 0x7F) {
      out += static_cast<char>(c);
    } else if (text::is_printable(c)) {
      text::append_utf8(out, c);
    } else if (c <= 0xFF) {
      out += "\\x";
      append_hex(out, c, 2);
    } else if (c <= 0xFFFF) {
      out += "\\u";
      append_hex(out, c, 4);
    } else {
      out += "\\U";
      append_hex(out, c, 8);
    }
  }
  out += quote;
  return out;
}

std::string repr(const Value& v) {
  std::string out;
  repr_into(out, v, 0);
  return out;
}

std::string to_str(const Value& v) {
  if (v.is_string()) return v.str();
  if (v.is_undefined()) return {};
  return repr(v);
}

std::string object_type_repr(const Value& v) {
  if (v.is_none()) return "None";
  return v.type_name() + " object";
}

}  // namespace hftrain::tokenizer::jinja
