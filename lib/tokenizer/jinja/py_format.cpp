// Python's str() and repr() of interpreter values.
#include "tokenizer/jinja/py_format.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "tokenizer/jinja/error.h"
#include "tokenizer/jinja/operators.h"
#include "tokenizer/jinja/text.h"

namespace hftrain::tokenizer::jinja {
namespace {

void append_hex(std::string& out, uint32_t v, int digits) {
  static const char* kHex = "0123456789abcdef";
  for (int shift = (digits - 1) * 4; shift >= 0; shift -= 4) out += kHex[(v >> shift) & 0xF];
}

// Python's repr of nested values. The containers being printed are on `active_`: one met again
// inside itself (only possible through a namespace, the one mutable container) prints as Python's
// Py_ReprEnter prints it, `[...]`, `{...}`; nesting past kMaxValueDepth and text past
// kMaxBuiltSize are refused.
class Printer {
 public:
  explicit Printer(std::string& out) : out_(out) {}

  void value(const Value& v, uint32_t depth) {
    if (depth > kMaxValueDepth) eval_fail("value nests too deep to print");
    check_built_size(out_.size());
    switch (v.kind()) {
      case Value::Kind::kUndefined:
        out_ += "Undefined";
        return;
      case Value::Kind::kNone:
        out_ += "None";
        return;
      case Value::Kind::kBool:
        out_ += v.get_bool() ? "True" : "False";
        return;
      case Value::Kind::kInt:
        out_ += std::to_string(v.get_int());
        return;
      case Value::Kind::kFloat:
        out_ += float_repr(v.get_float());
        return;
      case Value::Kind::kString:
        out_ += string_repr(v.str());
        return;
      case Value::Kind::kSeq: {
        const auto& s = v.seq();
        switch (s.kind) {
          case SeqKind::kList:
            seq(&s, s.items, "[", "]", "[...]", false, depth);
            return;
          case SeqKind::kTuple:
            seq(&s, s.items, "(", ")", "(...)", true, depth);
            return;
          case SeqKind::kDictKeys:
            seq(&s, s.items, "dict_keys([", "])", "...", false, depth);
            return;
          case SeqKind::kDictValues:
            seq(&s, s.items, "dict_values([", "])", "...", false, depth);
            return;
          case SeqKind::kDictItems:
            seq(&s, s.items, "dict_items([", "])", "...", false, depth);
            return;
        }
        return;
      }
      case Value::Kind::kDict:
        dict(v.dict(), depth);
        return;
      case Value::Kind::kIterator:
        out_ += "<" + v.iterator().type_name + " object>";
        return;
      case Value::Kind::kCallable:
        out_ += v.callable().repr();
        return;
      case Value::Kind::kObject:
        if (v.object().is_namespace()) {
          name_space(static_cast<const Namespace&>(v.object()), depth);
        } else {
          out_ += v.object().repr();
        }
        return;
    }
  }

  // jinja2's Namespace.__repr__: `<Namespace {attributes}>`.
  void name_space(const Namespace& ns, uint32_t depth) {
    out_ += "<Namespace ";
    dict(ns.attributes(), depth + 1);
    out_ += '>';
  }

 private:
  bool enter(const void* container) {
    if (std::find(active_.begin(), active_.end(), container) != active_.end()) return false;
    active_.push_back(container);
    return true;
  }

  void seq(const void* id, const std::vector<Value>& items, const char* open, const char* close, const char* again,
           bool tuple, uint32_t depth) {
    if (!enter(id)) {
      out_ += again;
      return;
    }
    out_ += open;
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) out_ += ", ";
      value(items[i], depth + 1);
    }
    if (tuple && items.size() == 1) out_ += ',';
    out_ += close;
    active_.pop_back();
  }

  void dict(const Dict& d, uint32_t depth) {
    if (!enter(&d)) {
      out_ += "{...}";
      return;
    }
    out_ += '{';
    bool first = true;
    for (const auto& [k, val] : d.entries()) {
      if (!first) out_ += ", ";
      first = false;
      value(k, depth + 1);
      out_ += ": ";
      value(val, depth + 1);
    }
    out_ += '}';
    active_.pop_back();
  }

  std::string& out_;
  std::vector<const void*> active_;
};

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
  int exp10 = 0;  // to_chars wrote it: a sign and at most three digits
  const char* exp_begin = sci.data() + e + 1;
  if (*exp_begin == '+') ++exp_begin;
  std::from_chars(exp_begin, sci.data() + sci.size(), exp10);
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
  const auto plain = [quote](char b) { return b >= 0x20 && b < 0x7F && b != quote && b != '\\'; };
  for (size_t i = 0, len = 0; i < s.size(); i += len) {
    if (out.size() > kMaxBuiltSize) check_built_size(out.size());  // escapes grow it up to 4 times
    len = 0;  // printable ASCII other than the quote and the backslash, copied as a run
    while (i + len < s.size() && plain(s[i + len])) ++len;
    if (len) {
      out.append(s, i, len);
      continue;
    }
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
  Printer(out).value(v, 0);
  check_built_size(out.size());
  return out;
}

std::string namespace_repr(const Namespace& ns) {
  std::string out;
  Printer(out).name_space(ns, 0);
  check_built_size(out.size());
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
