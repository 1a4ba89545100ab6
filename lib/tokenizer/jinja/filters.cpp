// The filter registry (is_known_filter, apply_filter) and the filters on single values: abs, attr,
// d/default, float, int, round, tojson (transformers' json.dumps override).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

#include "tokenizer/jinja/args.h"
#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/error.h"
#include "tokenizer/jinja/filters_impl.h"
#include "tokenizer/jinja/json_bridge.h"
#include "tokenizer/jinja/operators.h"
#include "tokenizer/jinja/py_format.h"
#include "tokenizer/jinja/text.h"

namespace hftrain::tokenizer::jinja {
namespace detail {
namespace {

Value f_default(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("default", args, {"default_value", "boolean"});
  if (v.is_undefined() || (a.bool_or(1, false) && !truthy(v))) return a.get_or(0, Value::from_string(""));
  return v;
}

Value f_abs(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs("abs", args, {});
  if (v.is_integral()) {
    if (v.get_int() == INT64_MIN) eval_fail_unsupported("integer overflow");
    return Value::from_int(v.get_int() < 0 ? -v.get_int() : v.get_int());
  }
  if (v.is_float()) return Value::from_float(std::fabs(v.get_float()));
  eval_fail("bad operand type for abs(): '" + v.type_name() + "'");
}

Value f_attr(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("attr", args, {"name"});
  const std::string name = to_str(a.get(0));
  require_defined(v);
  if (v.is_object()) {
    if (auto x = v.object().attribute(name)) return *x;
  } else if (auto m = find_method(v, name)) {
    return *m;
  }
  return Value::undefined("'" + object_type_repr(v) + "' has no attribute '" + name + "'");
}

// Python's int(s, base); nullopt when Python raises ValueError.
std::optional<int64_t> parse_int(const std::string& raw, int64_t base) {
  const std::string s = text::strip(raw, nullptr, true, true);
  size_t i = 0;
  bool negative = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
  auto prefix_base = [&](char c) { return c == 'x' ? 16 : c == 'o' ? 8 : c == 'b' ? 2 : 0; };
  if (i + 1 < s.size() && s[i] == '0') {
    const int p = prefix_base(static_cast<char>(s[i + 1] | 0x20));
    if (p && (base == 0 || base == p)) {
      base = p;
      i += 2;
      if (i < s.size() && s[i] == '_') ++i;
    }
  }
  if (base == 0) {
    base = 10;
    if (i < s.size() && s[i] == '0' && s.find_first_not_of("0_", i) != std::string::npos) return std::nullopt;
  }
  if (base < 2 || base > 36) return std::nullopt;
  int64_t value = 0;
  bool any = false, last_underscore = false;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '_') {
      if (!any || last_underscore) return std::nullopt;
      last_underscore = true;
      continue;
    }
    last_underscore = false;
    int d = c >= '0' && c <= '9' ? c - '0' : (c | 0x20) >= 'a' && (c | 0x20) <= 'z' ? (c | 0x20) - 'a' + 10 : 99;
    if (d >= base) return std::nullopt;
    if (__builtin_mul_overflow(value, base, &value) || __builtin_add_overflow(value, d, &value))
      eval_fail_unsupported("integer overflow");
    any = true;
  }
  if (!any || last_underscore) return std::nullopt;
  return negative ? -value : value;
}

// Python's float(s); nullopt when Python raises ValueError.
std::optional<double> parse_float(const std::string& raw) {
  const std::string s = text::strip(raw, nullptr, true, true);
  std::string clean;
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) clean += s[i++];
  std::string rest = s.substr(i);
  for (auto& c : rest) c = static_cast<char>(c | 0x20);
  if (rest == "inf" || rest == "infinity" || rest == "nan") return std::strtod((clean + rest).c_str(), nullptr);
  bool digits = false, dot = false, exp = false;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    const bool is_d = c >= '0' && c <= '9';
    if (is_d) {
      digits = true;
    } else if (c == '_') {
      if (i == 0 || i + 1 >= s.size() || !(s[i - 1] >= '0' && s[i - 1] <= '9') || !(s[i + 1] >= '0' && s[i + 1] <= '9'))
        return std::nullopt;
      continue;
    } else if (c == '.' && !dot && !exp) {
      dot = true;
    } else if ((c == 'e' || c == 'E') && digits && !exp) {
      exp = true;
      digits = false;
      clean += 'e';
      if (i + 1 < s.size() && (s[i + 1] == '+' || s[i + 1] == '-')) clean += s[++i];
      continue;
    } else {
      return std::nullopt;
    }
    clean += c;
  }
  if (!digits) return std::nullopt;
  return std::strtod(clean.c_str(), nullptr);
}

Value f_int(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("int", args, {"default", "base"});
  const Value fallback = a.get_or(0, Value::from_int(0));
  require_defined(v);
  if (v.is_integral()) return Value::from_int(v.get_int());
  if (v.is_float()) {
    const double d = v.get_float();
    if (std::isnan(d)) return fallback;
    if (std::isinf(d)) eval_fail("cannot convert float infinity to integer");
    if (std::fabs(d) >= 9.2e18) eval_fail_unsupported("integer overflow");
    return Value::from_int(static_cast<int64_t>(d));
  }
  if (v.is_string()) {
    if (auto i = parse_int(v.str(), a.int_or(1, 10))) return Value::from_int(*i);
    if (auto f = parse_float(v.str()); f && std::isfinite(*f) && std::fabs(*f) < 9.2e18)
      return Value::from_int(static_cast<int64_t>(*f));
  }
  return fallback;
}

Value f_float(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("float", args, {"default"});
  require_defined(v);
  if (v.is_number()) return Value::from_float(v.get_float());
  if (v.is_string())
    if (auto f = parse_float(v.str())) return Value::from_float(*f);
  return a.get_or(0, Value::from_float(0.0));
}

// Python's round(x, ndigits) for a float.
double round_half_even_digits(double x, int64_t ndigits) {
  if (!std::isfinite(x) || ndigits > 300) return x;
  if (ndigits >= 0) {
    char buf[512];
    std::snprintf(buf, sizeof(buf), "%.*f", static_cast<int>(ndigits), x);
    return std::strtod(buf, nullptr);
  }
  if (ndigits < -308) return 0.0 * x;  // float.__round__: 10**-ndigits is past any float (a signed zero)
  const double scale = std::pow(10.0, static_cast<double>(-ndigits));
  const double r = std::nearbyint(x / scale) * scale;
  if (std::isinf(r)) eval_fail("rounded value too large to represent");
  return r;
}

// Python's round(x, ndigits) for an int and ndigits < 0: the nearest multiple of 10**-ndigits, ties
// to the even multiple, in integer arithmetic (the magnitude unsigned: round half to even is
// symmetric).
int64_t round_int_digits(int64_t x, int64_t ndigits) {
  if (ndigits < -19) return 0;  // 10**20 / 2 is past any int64
  uint64_t p = 1;
  for (int64_t i = 0; i < -ndigits; ++i) p *= 10;  // at most 10**19 < 2**64
  const uint64_t m = x < 0 ? 0 - static_cast<uint64_t>(x) : static_cast<uint64_t>(x);
  uint64_t q = m / p;
  const uint64_t r = m % p;
  if (r > p - r || (r == p - r && (q & 1))) ++q;
  uint64_t rounded = 0;
  const uint64_t limit = x < 0 ? uint64_t{1} << 63 : static_cast<uint64_t>(INT64_MAX);
  if (__builtin_mul_overflow(q, p, &rounded) || rounded > limit) fail_int_overflow();
  return x < 0 ? static_cast<int64_t>(0 - rounded) : static_cast<int64_t>(rounded);
}

Value f_round(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("round", args, {"precision", "method"});
  const int64_t precision = a.int_or(0, 0);
  const std::string method = a.has(1) ? to_str(a.get(1)) : "common";
  if (method != "common" && method != "ceil" && method != "floor") eval_fail("method must be common, ceil or floor");
  require_defined(v);
  if (!v.is_number()) eval_fail("type " + v.type_name() + " doesn't define __round__ method");
  if (method == "common") {
    if (v.is_integral()) {
      if (precision >= 0) return Value::from_int(v.get_int());
      return Value::from_int(round_int_digits(v.get_int(), precision));
    }
    return Value::from_float(round_half_even_digits(v.get_float(), precision));
  }
  const double scale = std::pow(10.0, static_cast<double>(precision));
  const double scaled = v.get_float() * scale;
  const double r = method == "ceil" ? std::ceil(scaled) : std::floor(scaled);
  return Value::from_float(r / scale);
}

Value f_tojson(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("tojson", args, {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonDumpOptions o;
  o.ensure_ascii = a.bool_or(0, false);
  o.sort_keys = a.bool_or(3, false);
  if (a.has(1) && !a.get(1).is_none()) {
    const Value& indent = a.get(1);
    if (indent.is_string()) {
      o.indent = indent.str();
    } else if (indent.is_integral()) {
      if (indent.get_int() > 0) check_built_size(static_cast<uint64_t>(indent.get_int()));
      o.indent = std::string(static_cast<size_t>(std::max<int64_t>(indent.get_int(), 0)), ' ');
    } else {
      eval_fail("can't multiply sequence by non-int of type '" + indent.type_name() + "'");
    }
  }
  if (a.has(2) && !a.get(2).is_none()) {
    const std::vector<Value> seps = iterate(a.get(2));
    if (seps.size() != 2) eval_fail("separators must be a pair of strings");
    for (const auto& s : seps)
      if (!s.is_string()) eval_fail("separators must be a pair of strings");
    o.item_separator = seps[0].str();
    o.key_separator = seps[1].str();
  }
  return Value::from_string(json_dumps(v, o));
}

}  // namespace

const FilterTable& other_filters() {
  static const FilterTable table = {
      {"abs", f_abs},     {"attr", f_attr}, {"d", f_default},   {"default", f_default},
      {"float", f_float}, {"int", f_int},   {"round", f_round}, {"tojson", f_tojson},
  };
  return table;
}

}  // namespace detail

namespace {

const std::unordered_map<std::string_view, detail::FilterFn>& filter_registry() {
  static const auto registry = [] {
    std::unordered_map<std::string_view, detail::FilterFn> m;
    for (const auto* table : {&detail::text_filters(), &detail::sequence_filters(), &detail::other_filters()})
      for (const auto& [name, fn] : *table) m.emplace(name, fn);
    return m;
  }();
  return registry;
}

}  // namespace

bool is_known_filter(std::string_view name) {
  return filter_registry().count(name) != 0;
}

Value apply_filter(Interpreter& interp, const std::string& name, const Value& input, CallArgs& args) {
  const auto& registry = filter_registry();
  const auto it = registry.find(name);
  if (it == registry.end()) eval_fail_unsupported("unsupported filter `" + name + "`");
  return it->second(interp, input, args);
}

}  // namespace hftrain::tokenizer::jinja
