// The methods templates call on values: Python's str methods (indices in code points), dict.get/
// items/keys/values/copy, list and tuple count/index/copy. str.format supports `{}`, `{0}` and `{name}`
// fields without format specs.
#include <algorithm>
#include <charconv>
#include <system_error>

#include "tokenizer/jinja/args.h"
#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/error.h"
#include "tokenizer/jinja/operators.h"
#include "tokenizer/jinja/py_format.h"
#include "tokenizer/jinja/text.h"

namespace hftrain::tokenizer::jinja {
namespace {

Value str_value(std::string s) {
  return Value::from_string(std::move(s));
}

std::vector<std::string> affixes(const Value& v, const std::string& method) {
  require_defined(v);
  if (v.is_string()) return {v.str()};
  if (v.is_tuple()) {
    std::vector<std::string> out;
    for (const auto& item : v.seq().items) {
      if (!item.is_string()) eval_fail("tuple for " + method + " must only contain str, not " + item.type_name());
      out.push_back(item.str());
    }
    return out;
  }
  eval_fail(method + " first arg must be str or a tuple of str, not " + v.type_name());
}

// Code-point index of a byte offset.
int64_t cp_index(const std::string& s, size_t byte) {
  return static_cast<int64_t>(text::length(std::string_view(s).substr(0, byte)));
}

std::string pad(const std::string& s, int64_t width, const std::string& fill, int where) {
  const auto len = static_cast<int64_t>(text::length(s));
  if (width <= len) return s;
  check_built_size(static_cast<uint64_t>(width));  // first, so that the product below cannot wrap
  check_built_size(static_cast<uint64_t>(width) * fill.size());
  const int64_t total = width - len;
  int64_t left = 0;
  if (where == 0) left = total / 2 + (total & width & 1);
  if (where == 1) left = total;
  std::string out;
  for (int64_t i = 0; i < left; ++i) out += fill;
  out += s;
  for (int64_t i = 0; i < total - left; ++i) out += fill;
  return out;
}

std::string fill_char(const BoundArgs& a, size_t i) {
  const std::string* f = a.str_or_null(i);
  if (!f) return " ";
  if (text::length(*f) != 1) eval_fail("The fill character must be exactly one character long");
  return *f;
}

bool str_predicate(const std::string& s, const std::string& name) {
  const std::u32string cps = text::to_u32(s);
  if (cps.empty()) return false;
  if (name == "islower" || name == "isupper") {
    bool cased = false;
    for (char32_t c : cps) {
      if (name == "islower" ? text::is_cased_upper(c) : text::is_cased_lower(c)) return false;
      cased = cased || text::is_cased_upper(c) || text::is_cased_lower(c);
    }
    return cased;
  }
  for (char32_t c : cps) {
    const bool ok = name == "isspace"   ? text::is_space(c)
                    : name == "isdigit" ? text::is_digit(c)
                    : name == "isalpha" ? text::is_alpha(c)
                                        : text::is_alpha(c) || text::is_digit(c);
    if (!ok) return false;
  }
  return true;
}

std::string format_string(const std::string& fmt, const CallArgs& args) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    const char c = fmt[i];
    if (c == '}') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '}') {
        out += '}';
        ++i;
        continue;
      }
      eval_fail("Single '}' encountered in format string");
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    const size_t close = fmt.find('}', i);
    if (close == std::string::npos) eval_fail("Single '{' encountered in format string");
    const std::string field = fmt.substr(i + 1, close - i - 1);
    if (field.find_first_of(":!.[") != std::string::npos)
      eval_fail_unsupported("str.format field `{" + field + "}` (only {}, {0} and {name} are supported)");
    const Value* v = nullptr;
    if (field.empty()) {
      if (auto_index >= args.positional.size())
        eval_fail("Replacement index " + std::to_string(auto_index) + " out of range");
      v = &args.positional[auto_index++];
    } else if (field.find_first_not_of("0123456789") == std::string::npos) {
      int64_t k = 0;  // Python reads the index as a Py_ssize_t
      const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), k);
      if (ec != std::errc() || end != field.data() + field.size())
        eval_fail("Too many decimal digits in format string");
      if (static_cast<uint64_t>(k) >= args.positional.size())
        eval_fail("Replacement index " + std::to_string(k) + " out of range");
      v = &args.positional[static_cast<size_t>(k)];
    } else {
      for (const auto& [key, value] : args.keyword)
        if (key == field) v = &value;
      if (!v) eval_fail("KeyError: '" + field + "'");
    }
    const std::string text = to_str(*v);
    check_built_size(uint64_t{out.size()} + text.size());
    out += text;
    i = close;
  }
  return out;
}

Value string_method(const std::string& s, const std::string& name, CallArgs& args) {
  const std::string fn = "str." + name;
  if (name == "format") return str_value(format_string(s, args));
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    BoundArgs a(fn, args, {"chars"});
    return str_value(text::strip(s, a.str_or_null(0), name != "rstrip", name != "lstrip"));
  }
  if (name == "split" || name == "rsplit") {
    BoundArgs a(fn, args, {"sep", "maxsplit"});
    const std::string* sep = a.str_or_null(0);
    if (sep && sep->empty()) eval_fail("empty separator");
    const int64_t maxsplit = a.int_or(1, -1);
    if (s.size() > kMaxStringItems) {  // the pieces counted before they are made
      uint64_t pieces = 1;
      if (sep) {
        for (size_t at = s.find(*sep); at != std::string::npos; at = s.find(*sep, at + sep->size())) ++pieces;
      } else {
        bool in_space = true;
        pieces = 0;
        for (size_t i = 0, len = 0; i < s.size(); i += len) {
          const bool space = text::is_space(text::decode(s, i, len));
          if (!space && in_space) ++pieces;
          in_space = space;
        }
      }
      if (maxsplit >= 0) pieces = std::min<uint64_t>(pieces, static_cast<uint64_t>(maxsplit) + 1);
      check_string_items(pieces, "splitting a string");
    }
    std::vector<Value> parts;
    for (auto& p : text::split(s, sep, maxsplit, name == "rsplit")) parts.push_back(str_value(std::move(p)));
    return Value::from_seq(std::move(parts));
  }
  if (name == "splitlines") {
    BoundArgs a(fn, args, {"keepends"});
    if (a.bool_or(0, false)) eval_fail_unsupported("str.splitlines(keepends=True)");
    if (s.size() > kMaxStringItems) {
      uint64_t lines = 1;  // at most: every byte that can start or end a line break counted
      for (const char c : s) {
        const auto b = static_cast<unsigned char>(c);
        lines += b == '\n' || b == '\r' || (b >= 0x0b && b <= 0x0c) || (b >= 0x1c && b <= 0x1e) || b == 0x85 ||
                 b == 0xa8 || b == 0xa9;
      }
      check_string_items(lines, "splitting a string's lines");
    }
    std::vector<Value> parts;
    for (auto& p : text::splitlines(s)) parts.push_back(str_value(std::move(p)));
    return Value::from_seq(std::move(parts));
  }
  if (name == "startswith" || name == "endswith") {
    BoundArgs a(fn, args, {"prefix"});
    for (const auto& x : affixes(a.get(0), name)) {
      const bool hit = name == "startswith" ? s.compare(0, x.size(), x) == 0
                                            : s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
      if (hit) return Value::from_bool(true);
    }
    return Value::from_bool(false);
  }
  if (name == "upper") return str_value(text::upper(s));
  if (name == "lower") return str_value(text::lower(s));
  if (name == "title") return str_value(text::py_title(s));
  if (name == "capitalize") return str_value(text::capitalize(s));
  if (name == "swapcase") return str_value(text::swapcase(s));
  if (name == "replace") {
    BoundArgs a(fn, args, {"old", "new", "count"});
    const std::string* o = a.str_or_null(0);
    const std::string* n = a.str_or_null(1);
    if (!o || !n) eval_fail("replace() arguments must be str");
    return str_value(bounded_replace(s, *o, *n, a.int_or(2, -1)));
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count") {
    BoundArgs a(fn, args, {"sub"});
    const std::string* sub = a.str_or_null(0);
    if (!sub) eval_fail("must be str, not " + a.get(0).type_name());
    if (name == "count") return Value::from_int(text::count(s, *sub));
    const size_t at = name[0] == 'r' ? s.rfind(*sub) : s.find(*sub);
    if (at == std::string::npos) {
      if (name == "index" || name == "rindex") eval_fail("substring not found");
      return Value::from_int(-1);
    }
    return Value::from_int(cp_index(s, at));
  }
  if (name == "join") {
    BoundArgs a(fn, args, {"iterable"});
    std::string out;
    size_t i = 0;
    for (const auto& item : iterate(a.get(0))) {
      if (!item.is_string())
        eval_fail("sequence item " + std::to_string(i) + ": expected str instance, " + item.type_name() + " found");
      check_built_size(uint64_t{out.size()} + (i ? s.size() : 0) + item.str().size());
      if (i++) out += s;
      out += item.str();
    }
    return str_value(std::move(out));
  }
  if (name == "isalnum" || name == "isalpha" || name == "isdigit" || name == "islower" || name == "isspace" ||
      name == "isupper")
    return Value::from_bool(str_predicate(s, name));
  if (name == "center" || name == "ljust" || name == "rjust") {
    BoundArgs a(fn, args, {"width", "fillchar"});
    return str_value(pad(s, a.int_or(0, 0), fill_char(a, 1), name == "center" ? 0 : name == "rjust" ? 1 : 2));
  }
  if (name == "zfill") {
    BoundArgs a(fn, args, {"width"});
    const int64_t width = a.int_or(0, 0);
    const auto len = static_cast<int64_t>(text::length(s));
    if (width <= len) return str_value(s);
    check_built_size(static_cast<uint64_t>(width));
    const bool sign = !s.empty() && (s[0] == '+' || s[0] == '-');
    std::string out = sign ? s.substr(0, 1) : "";
    out += std::string(static_cast<size_t>(width - len), '0');
    out += sign ? s.substr(1) : s;
    return str_value(std::move(out));
  }
  if (name == "partition" || name == "rpartition") {
    BoundArgs a(fn, args, {"sep"});
    const std::string* sep = a.str_or_null(0);
    if (!sep) eval_fail("must be str, not " + a.get(0).type_name());
    if (sep->empty()) eval_fail("empty separator");
    const size_t at = name == "partition" ? s.find(*sep) : s.rfind(*sep);
    std::vector<Value> parts;
    if (at == std::string::npos) {
      parts = name == "partition" ? std::vector<Value>{str_value(s), str_value(""), str_value("")}
                                  : std::vector<Value>{str_value(""), str_value(""), str_value(s)};
    } else {
      parts = {str_value(s.substr(0, at)), str_value(*sep), str_value(s.substr(at + sep->size()))};
    }
    return Value::from_seq(std::move(parts), SeqKind::kTuple);
  }
  if (name == "removeprefix" || name == "removesuffix") {
    BoundArgs a(fn, args, {"affix"});
    const std::string* x = a.str_or_null(0);
    if (!x) eval_fail("must be str, not " + a.get(0).type_name());
    if (name == "removeprefix" && s.compare(0, x->size(), *x) == 0) return str_value(s.substr(x->size()));
    if (name == "removesuffix" && !x->empty() && s.size() >= x->size() &&
        s.compare(s.size() - x->size(), x->size(), *x) == 0)
      return str_value(s.substr(0, s.size() - x->size()));
    return str_value(s);
  }
  eval_fail_unsupported("unsupported method `str." + name + "`");
}

Value dict_method(const Value& self, const std::string& name, CallArgs& args) {
  const Dict& d = self.dict();
  if (name == "get") {
    BoundArgs a("dict.get", args, {"key", "default"});
    const Value* v = d.find(a.get(0));
    return v ? *v : a.get_or(1, Value::none());
  }
  BoundArgs a("dict." + name, args, {});
  if (name == "copy") return Value::from_dict(d);  // a new dict, as Python's (`is sameas`, printing)
  std::vector<Value> out;
  for (const auto& [k, v] : d.entries()) {
    if (name == "keys") out.push_back(k);
    if (name == "values") out.push_back(v);
    if (name == "items") out.push_back(Value::from_seq({k, v}, SeqKind::kTuple));
  }
  const SeqKind kind = name == "keys"     ? SeqKind::kDictKeys
                       : name == "values" ? SeqKind::kDictValues
                                          : SeqKind::kDictItems;
  return Value::from_seq(std::move(out), kind);
}

Value seq_method(const Value& self, const std::string& name, CallArgs& args) {
  const auto& items = self.seq().items;
  if (name == "copy") {
    BoundArgs a("list.copy", args, {});
    return Value::from_seq(items, self.seq().kind);  // a new list, as Python's
  }
  BoundArgs a(self.type_name() + "." + name, args, {"value"});
  const Value& x = a.get(0);
  int64_t n = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    if (!equals(items[i], x)) continue;
    if (name == "index") return Value::from_int(static_cast<int64_t>(i));
    ++n;
  }
  if (name == "index") eval_fail(self.type_name() + ".index(x): x not in " + self.type_name());
  return Value::from_int(n);
}

}  // namespace

Value call_method(Interpreter&, const Value& self, const std::string& name, CallArgs& args) {
  if (self.is_string()) return string_method(self.str(), name, args);
  if (self.is_dict()) return dict_method(self, name, args);
  if (self.is_seq()) return seq_method(self, name, args);
  eval_fail_unsupported("unsupported method `" + self.type_name() + "." + name + "`");
}

}  // namespace hftrain::tokenizer::jinja
