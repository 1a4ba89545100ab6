// Attribute, item and slice access with jinja2's sandbox rules: `x.name` looks for a method of the
// value first and then the item; `x[key]` the item first and then, for a string key, the method.
// Methods that mutate (list.append, dict.update, ...) resolve to an undefined that raises jinja2's
// "unsafe" error when called, as ImmutableSandboxedEnvironment does.
#include <algorithm>
#include <array>

#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/error.h"
#include "tokenizer/jinja/operators.h"
#include "tokenizer/jinja/py_format.h"
#include "tokenizer/jinja/text.h"

namespace hftrain::tokenizer::jinja {
namespace {

template <size_t N>
bool one_of(std::string_view name, const std::array<std::string_view, N>& names) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

constexpr std::array<std::string_view, 35> kStrMethods = {
    "capitalize",   "center",     "count",   "endswith", "find",  "index",      "isalnum", "isalpha",   "isdigit",
    "islower",      "isspace",    "isupper", "join",     "ljust", "lower",      "lstrip",  "partition", "removeprefix",
    "removesuffix", "replace",    "rfind",   "rindex",   "rjust", "rpartition", "rsplit",  "rstrip",    "split",
    "splitlines",   "startswith", "strip",   "swapcase", "title", "upper",      "zfill",   "format"};
constexpr std::array<std::string_view, 13> kStrOtherMethods = {
    "casefold",  "encode",      "expandtabs", "format_map", "isascii",   "isdecimal", "isidentifier",
    "isnumeric", "isprintable", "istitle",    "maketrans",  "translate", "__class__"};
constexpr std::array<std::string_view, 5> kDictMethods = {"get", "items", "keys", "values", "copy"};
constexpr std::array<std::string_view, 5> kDictUnsafe = {"clear", "pop", "popitem", "setdefault", "update"};
constexpr std::array<std::string_view, 3> kListMethods = {"count", "index", "copy"};
constexpr std::array<std::string_view, 8> kListUnsafe = {"append", "clear",  "extend",  "insert",
                                                         "pop",    "remove", "reverse", "sort"};
constexpr std::array<std::string_view, 10> kNumberAttrs = {"bit_length", "bit_count", "conjugate",  "denominator",
                                                           "numerator",  "to_bytes",  "from_bytes", "as_integer_ratio",
                                                           "is_integer", "hex"};

class BoundMethod final : public Callable {
 public:
  BoundMethod(Value self, std::string name) : self_(std::move(self)), name_(std::move(name)) {}
  Value call(Interpreter& interp, CallArgs& args) const override { return call_method(interp, self_, name_, args); }
  std::string repr() const override { return "<built-in method " + name_ + " of " + self_.type_name() + " object>"; }
  std::string type_name() const override { return "builtin_function_or_method"; }
  uint32_t depth() const override { return value_depth(self_); }

 private:
  Value self_;
  std::string name_;
};

Value unsafe(const Value& obj, std::string_view name) {
  return Value::undefined("access to attribute '" + std::string(name) + "' of '" + obj.type_name() +
                          "' object is unsafe.");
}

Value unsupported(const Value& obj, std::string_view name) {
  return Value::undefined("unsupported method `" + obj.type_name() + "." + std::string(name) +
                          "` (not in hftrain's Jinja subset)");
}

Value missing_attribute(const Value& obj, std::string_view name) {
  return Value::undefined("'" + object_type_repr(obj) + "' has no attribute '" + std::string(name) + "'");
}

Value missing_item(const Value& obj, const Value& key) {
  if (key.is_string()) return missing_attribute(obj, key.str());
  return Value::undefined(object_type_repr(obj) + " has no element " + repr(key));
}

// Python's slice.indices(): the positions a slice selects from a sequence of `len` items.
std::vector<size_t> slice_positions(int64_t len, const Value& start, const Value& stop, const Value& step) {
  const int64_t st = step.is_none() ? 1 : step.get_int();
  if (st == 0) eval_fail("slice step cannot be zero");
  auto adjust = [&](const Value& v, int64_t fallback) {
    if (v.is_none()) return fallback;
    int64_t i = v.get_int();
    if (i < 0) {
      i += len;
      if (i < 0) i = st < 0 ? -1 : 0;
    } else if (i >= len) {
      i = st < 0 ? len - 1 : len;
    }
    return i;
  };
  const int64_t b = adjust(start, st > 0 ? 0 : len - 1);
  const int64_t e = adjust(stop, st > 0 ? len : -1);
  // How many, as Python's PySlice_AdjustIndices counts them (b and e lie in [-1, len], so neither
  // the differences nor b + k * st can overflow; the step's magnitude is taken unsigned).
  uint64_t n = 0;
  if (st > 0 && b < e) n = (static_cast<uint64_t>(e - b) - 1) / static_cast<uint64_t>(st) + 1;
  if (st < 0 && b > e) n = (static_cast<uint64_t>(b - e) - 1) / (0 - static_cast<uint64_t>(st)) + 1;
  std::vector<size_t> out;
  out.reserve(static_cast<size_t>(n));
  for (uint64_t k = 0; k < n; ++k) out.push_back(static_cast<size_t>(b + static_cast<int64_t>(k) * st));
  return out;
}

bool valid_bound(const Value& v) {
  return v.is_none() || v.is_integral();
}

}  // namespace

std::optional<Value> find_method(const Value& self, std::string_view name) {
  auto bound = [&] { return Value::from_callable(std::make_shared<BoundMethod>(self, std::string(name))); };
  switch (self.kind()) {
    case Value::Kind::kString:
      if (one_of(name, kStrMethods)) return bound();
      if (one_of(name, kStrOtherMethods)) return unsupported(self, name);
      return std::nullopt;
    case Value::Kind::kDict:
      if (one_of(name, kDictMethods)) return bound();
      if (one_of(name, kDictUnsafe)) return unsafe(self, name);
      if (name == "fromkeys") return unsupported(self, name);
      return std::nullopt;
    case Value::Kind::kSeq:
      if (self.seq().kind == SeqKind::kList) {
        if (one_of(name, kListMethods)) return bound();
        if (one_of(name, kListUnsafe)) return unsafe(self, name);
      } else if (self.seq().kind == SeqKind::kTuple) {
        if (name == "count" || name == "index") return bound();
      } else if (name == "mapping" || name == "isdisjoint") {
        return unsupported(self, name);
      }
      return std::nullopt;
    case Value::Kind::kBool:
    case Value::Kind::kInt:
    case Value::Kind::kFloat:
      if (one_of(name, kNumberAttrs)) return unsupported(self, name);
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

namespace {

// What Python's getattr finds: an object's attribute, a number's real/imag, a method.
std::optional<Value> python_attribute(const Value& obj, std::string_view name) {
  if (obj.is_object()) return obj.object().attribute(name);
  if (obj.is_number() && (name == "real" || name == "imag")) {
    if (name == "imag") return obj.is_float() ? Value::from_float(0.0) : Value::from_int(0);
    return obj.is_float() ? obj : Value::from_int(obj.get_int());
  }
  return find_method(obj, name);
}

}  // namespace

Value get_attr(const Value& obj, std::string_view name) {
  require_defined(obj);
  if (auto v = python_attribute(obj, name)) return *v;
  if (obj.is_dict())
    if (const Value* v = obj.dict().find(name)) return *v;
  return missing_attribute(obj, name);
}

Value get_item(const Value& obj, const Value& key) {
  require_defined(obj);
  switch (obj.kind()) {
    case Value::Kind::kDict: {
      const Value* v = nullptr;
      try {
        v = obj.dict().find(key);
      } catch (const EvalError&) {  // unhashable key: a TypeError, which jinja2 turns into undefined
      }
      if (v) return *v;
      break;
    }
    case Value::Kind::kSeq:
      if ((obj.seq().kind == SeqKind::kList || obj.seq().kind == SeqKind::kTuple) && key.is_integral()) {
        const auto& items = obj.seq().items;
        int64_t i = key.get_int();
        if (i < 0) i += static_cast<int64_t>(items.size());
        if (i >= 0 && i < static_cast<int64_t>(items.size())) return items[static_cast<size_t>(i)];
      }
      break;
    case Value::Kind::kString:
      if (key.is_integral()) {
        const std::string& s = obj.str();
        int64_t i = key.get_int();
        if (i < 0) i += static_cast<int64_t>(text::length(s));
        if (i >= 0) {
          const size_t at = text::byte_offset(s, static_cast<size_t>(i));
          if (at < s.size()) {
            size_t len = 0;
            text::decode(s, at, len);
            return Value::from_string(s.substr(at, len));
          }
        }
      }
      break;
    default:
      break;
  }
  if (key.is_string())
    if (auto v = python_attribute(obj, key.str())) return *v;
  return missing_item(obj, key);
}

Value get_slice(const Value& obj, const Value& start, const Value& stop, const Value& step) {
  require_defined(obj);
  const bool bounds_ok = valid_bound(start) && valid_bound(stop) && valid_bound(step);
  if (bounds_ok && obj.is_string()) {
    const std::u32string cps = text::to_u32(obj.str());
    std::u32string out;
    for (size_t i : slice_positions(static_cast<int64_t>(cps.size()), start, stop, step)) out += cps[i];
    return Value::from_string(text::to_utf8(out));
  }
  if (bounds_ok && obj.is_seq() && (obj.seq().kind == SeqKind::kList || obj.seq().kind == SeqKind::kTuple)) {
    const auto& items = obj.seq().items;
    std::vector<Value> out;
    for (size_t i : slice_positions(static_cast<int64_t>(items.size()), start, stop, step)) out.push_back(items[i]);
    return Value::from_seq(std::move(out), obj.seq().kind);
  }
  return Value::undefined(object_type_repr(obj) + " has no element slice(" + repr(start) + ", " + repr(stop) + ", " +
                          repr(step) + ")");
}

}  // namespace hftrain::tokenizer::jinja
