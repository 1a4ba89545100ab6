// Python's operators on interpreter values (see operators.h).
#include "tokenizer/jinja/operators.h"

#include <algorithm>
#include <cmath>

#include "tokenizer/jinja/error.h"
#include "tokenizer/jinja/py_format.h"
#include "tokenizer/jinja/text.h"

namespace hftrain::tokenizer::jinja {
namespace {

const char* op_symbol(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd:
      return "+";
    case BinaryOp::kSub:
      return "-";
    case BinaryOp::kMul:
      return "*";
    case BinaryOp::kDiv:
      return "/";
    case BinaryOp::kFloorDiv:
      return "//";
    case BinaryOp::kMod:
      return "%";
    case BinaryOp::kPow:
      return "** or pow()";
  }
  return "?";
}

const char* cmp_symbol(CompareOp op) {
  switch (op) {
    case CompareOp::kLt:
      return "<";
    case CompareOp::kLe:
      return "<=";
    case CompareOp::kGt:
      return ">";
    case CompareOp::kGe:
      return ">=";
    default:
      return "==";
  }
}

[[noreturn]] void fail_operands(BinaryOp op, const Value& a, const Value& b) {
  eval_fail(std::string("unsupported operand type(s) for ") + op_symbol(op) + ": '" + a.type_name() + "' and '" +
            b.type_name() + "'");
}

int64_t add_checked(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) fail_int_overflow();
  return r;
}
int64_t sub_checked(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) fail_int_overflow();
  return r;
}
int64_t mul_checked(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) fail_int_overflow();
  return r;
}

int64_t floor_div(int64_t a, int64_t b) {
  if (a == INT64_MIN && b == -1) fail_int_overflow();
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t floor_mod(int64_t a, int64_t b) {
  if (b == -1) return 0;
  int64_t m = a % b;
  if (m != 0 && ((m < 0) != (b < 0))) m += b;
  return m;
}

double float_mod(double vx, double wx) {
  double mod = std::fmod(vx, wx);
  if (mod != 0.0) {
    if ((wx < 0) != (mod < 0)) mod += wx;
  } else {
    mod = std::copysign(0.0, wx);
  }
  return mod;
}

double float_floordiv(double vx, double wx) {
  double mod = std::fmod(vx, wx);
  double div = (vx - mod) / wx;
  if (mod != 0.0 && ((wx < 0) != (mod < 0))) div -= 1.0;
  if (div != 0.0) {
    double floordiv = std::floor(div);
    if (div - floordiv > 0.5) floordiv += 1.0;
    return floordiv;
  }
  return std::copysign(0.0, vx / wx);
}

Value repeat(const Value& seq, int64_t n) {
  if (n < 0) n = 0;
  const auto count = static_cast<size_t>(n);
  if (seq.is_string()) {
    const std::string& s = seq.str();
    if (!s.empty() && count > kMaxBuiltSize / s.size()) eval_fail_unsupported("string repetition result too large");
    const size_t total = s.size() * count;
    std::string out;
    out.reserve(total);
    if (total > 0) {  // doubling: 'x' * 100000000 is a few copies, not 10^8 appends
      out = s;
      while (out.size() <= total / 2) out.append(out, 0, out.size());
      out.append(out, 0, total - out.size());
    }
    return Value::from_string(std::move(out));
  }
  const auto& items = seq.seq().items;
  if (!items.empty() && count > kMaxBuiltItems / items.size())
    eval_fail_unsupported("list repetition result too large");
  std::vector<Value> out;
  out.reserve(items.size() * count);
  for (size_t i = 0; i < count; ++i) out.insert(out.end(), items.begin(), items.end());
  return Value::from_seq(std::move(out), seq.seq().kind);
}

bool is_list_or_tuple(const Value& v) {
  return v.is_seq() && (v.seq().kind == SeqKind::kList || v.seq().kind == SeqKind::kTuple);
}

Value int_pow(int64_t base, int64_t exp) {
  if (exp < 0) {
    if (base == 0) eval_fail("0.0 cannot be raised to a negative power");
    return Value::from_float(std::pow(static_cast<double>(base), static_cast<double>(exp)));
  }
  int64_t result = 1;
  while (exp > 0) {
    if (exp & 1) result = mul_checked(result, base);
    exp >>= 1;
    if (exp > 0) base = mul_checked(base, base);
  }
  return Value::from_int(result);
}

// Python's rich comparison for ordering; `op` only names the operator in the error.
int ordering(const Value& a, const Value& b, CompareOp op) {
  require_defined(a);
  require_defined(b);
  if (a.is_number() && b.is_number()) {
    if (a.is_integral() && b.is_integral()) return a.get_int() < b.get_int() ? -1 : a.get_int() > b.get_int();
    const double x = a.get_float(), y = b.get_float();
    if (std::isnan(x) || std::isnan(y)) return 2;  // unordered: every ordering comparison is false
    return x < y ? -1 : x > y;
  }
  if (a.is_string() && b.is_string()) {
    const int c = a.str().compare(b.str());
    return c < 0 ? -1 : c > 0;
  }
  if (is_list_or_tuple(a) && is_list_or_tuple(b) && a.seq().kind == b.seq().kind) {
    const auto& x = a.seq().items;
    const auto& y = b.seq().items;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i)
      if (!equals(x[i], y[i])) return ordering(x[i], y[i], op);
    return x.size() < y.size() ? -1 : x.size() > y.size();
  }
  eval_fail(std::string("'") + cmp_symbol(op) + "' not supported between instances of '" + a.type_name() + "' and '" +
            b.type_name() + "'");
}

}  // namespace

void fail_undefined(const Value& v) {
  eval_fail(v.undefined_message());
}

void fail_int_overflow() {
  eval_fail_unsupported("integer overflow: the interpreter's integers are 64-bit (Python's are unbounded)");
}

void check_built_size(uint64_t bytes) {
  if (bytes > kMaxBuiltSize)
    eval_fail_unsupported("a string of " + std::to_string(bytes) + " bytes (the limit is " +
                          std::to_string(kMaxBuiltSize) + ")");
}

std::string bounded_replace(std::string_view s, std::string_view old_s, std::string_view new_s, int64_t count) {
  uint64_t hits = static_cast<uint64_t>(text::count(s, old_s));
  if (count >= 0) hits = std::min(hits, static_cast<uint64_t>(count));
  if (new_s.size() > old_s.size()) check_built_size(s.size() + hits * (new_s.size() - old_s.size()));
  return text::replace(s, old_s, new_s, count);
}

int64_t checked_int(const Value& v, const char* what) {
  if (!v.is_integral()) eval_fail(std::string(what) + " must be an integer, not '" + v.type_name() + "'");
  return v.get_int();
}

Value binary_op(BinaryOp op, const Value& a, const Value& b) {
  require_defined(a);
  require_defined(b);
  const bool ints = a.is_integral() && b.is_integral();
  const bool nums = a.is_number() && b.is_number();
  switch (op) {
    case BinaryOp::kAdd:
      if (ints) return Value::from_int(add_checked(a.get_int(), b.get_int()));
      if (nums) return Value::from_float(a.get_float() + b.get_float());
      if (a.is_string() && b.is_string()) {
        if (a.str().size() + b.str().size() > kMaxBuiltSize) eval_fail_unsupported("string result too large");
        return Value::from_string(a.str() + b.str());
      }
      if (is_list_or_tuple(a) && is_list_or_tuple(b) && a.seq().kind == b.seq().kind) {
        if (a.seq().items.size() + b.seq().items.size() > kMaxBuiltItems)
          eval_fail_unsupported("a " + a.type_name() + " of more than " + std::to_string(kMaxBuiltItems) + " items");
        std::vector<Value> items = a.seq().items;
        items.insert(items.end(), b.seq().items.begin(), b.seq().items.end());
        return Value::from_seq(std::move(items), a.seq().kind);
      }
      if (a.is_string() || a.is_list() || a.is_tuple())
        eval_fail("can only concatenate " + a.type_name() + " (not \"" + b.type_name() + "\") to " + a.type_name());
      fail_operands(op, a, b);
    case BinaryOp::kSub:
      if (ints) return Value::from_int(sub_checked(a.get_int(), b.get_int()));
      if (nums) return Value::from_float(a.get_float() - b.get_float());
      fail_operands(op, a, b);
    case BinaryOp::kMul:
      if (ints) return Value::from_int(mul_checked(a.get_int(), b.get_int()));
      if (nums) return Value::from_float(a.get_float() * b.get_float());
      if ((a.is_string() || is_list_or_tuple(a)) && b.is_integral()) return repeat(a, b.get_int());
      if ((b.is_string() || is_list_or_tuple(b)) && a.is_integral()) return repeat(b, a.get_int());
      if (a.is_string() || is_list_or_tuple(a) || b.is_string() || is_list_or_tuple(b))
        eval_fail("can't multiply sequence by non-int of type '" +
                  (a.is_string() || is_list_or_tuple(a) ? b : a).type_name() + "'");
      fail_operands(op, a, b);
    case BinaryOp::kDiv:
      if (nums) {
        if (b.get_float() == 0.0) eval_fail(ints ? "division by zero" : "float division by zero");
        return Value::from_float(a.get_float() / b.get_float());
      }
      fail_operands(op, a, b);
    case BinaryOp::kFloorDiv:
      if (ints) {
        if (b.get_int() == 0) eval_fail("integer division or modulo by zero");
        return Value::from_int(floor_div(a.get_int(), b.get_int()));
      }
      if (nums) {
        if (b.get_float() == 0.0) eval_fail("float floor division by zero");
        return Value::from_float(float_floordiv(a.get_float(), b.get_float()));
      }
      fail_operands(op, a, b);
    case BinaryOp::kMod:
      if (ints) {
        if (b.get_int() == 0) eval_fail("integer modulo by zero");
        return Value::from_int(floor_mod(a.get_int(), b.get_int()));
      }
      if (nums) {
        if (b.get_float() == 0.0) eval_fail("float modulo");
        return Value::from_float(float_mod(a.get_float(), b.get_float()));
      }
      if (a.is_string()) eval_fail_unsupported("printf-style string formatting (`str % args`)");
      fail_operands(op, a, b);
    case BinaryOp::kPow:
      if (ints) return int_pow(a.get_int(), b.get_int());
      if (nums) {
        const double x = a.get_float(), y = b.get_float();
        if (x == 0.0 && y < 0) eval_fail("0.0 cannot be raised to a negative power");
        if (x < 0 && y != std::trunc(y)) eval_fail_unsupported("a complex result of `**`");
        return Value::from_float(std::pow(x, y));
      }
      fail_operands(op, a, b);
  }
  fail_operands(op, a, b);
}

Value negate(const Value& v) {
  require_defined(v);
  if (v.is_integral()) return Value::from_int(sub_checked(0, v.get_int()));
  if (v.is_float()) return Value::from_float(-v.get_float());
  eval_fail("bad operand type for unary -: '" + v.type_name() + "'");
}

Value unary_plus(const Value& v) {
  require_defined(v);
  if (v.is_integral()) return Value::from_int(v.get_int());
  if (v.is_float()) return v;
  eval_fail("bad operand type for unary +: '" + v.type_name() + "'");
}

bool compare(CompareOp op, const Value& a, const Value& b) {
  switch (op) {
    case CompareOp::kEq:
      return equals(a, b);
    case CompareOp::kNe:
      return !equals(a, b);
    case CompareOp::kIn:
      return contains(b, a);
    case CompareOp::kNotIn:
      return !contains(b, a);
    default:
      break;
  }
  const int c = ordering(a, b, op);
  if (c == 2) return false;
  switch (op) {
    case CompareOp::kLt:
      return c < 0;
    case CompareOp::kLe:
      return c <= 0;
    case CompareOp::kGt:
      return c > 0;
    case CompareOp::kGe:
      return c >= 0;
    default:
      return false;
  }
}

int py_compare(const Value& a, const Value& b) {
  const int c = ordering(a, b, CompareOp::kLt);
  return c == 2 ? 0 : c;
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::kUndefined:
      return false;
    case Value::Kind::kString:
      if (!item.is_string()) eval_fail("'in <string>' requires string as left operand, not " + item.type_name());
      return container.str().find(item.str()) != std::string::npos;
    case Value::Kind::kSeq:
      if (container.seq().kind == SeqKind::kDictKeys || container.seq().kind == SeqKind::kDictItems) hash_key(item);
      for (const auto& x : container.seq().items)
        if (equals(x, item)) return true;
      return false;
    case Value::Kind::kDict:
      return container.dict().find(item) != nullptr;
    case Value::Kind::kIterator: {
      auto& it = container.iterator();
      while (it.pos < it.items.size())
        if (equals(it.items[it.pos++], item)) return true;
      return false;
    }
    default:
      eval_fail("argument of type '" + container.type_name() + "' is not iterable");
  }
}

void check_string_items(uint64_t pieces, const char* what) {
  if (pieces > kMaxStringItems) {
    eval_fail_unsupported(std::string(what) + " into " + std::to_string(pieces) + " pieces (at most " +
                          std::to_string(kMaxStringItems) + ")");
  }
}

std::vector<Value> iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return {};
    case Value::Kind::kSeq:
      return v.seq().items;
    case Value::Kind::kDict: {
      std::vector<Value> keys;
      keys.reserve(v.dict().size());
      for (const auto& e : v.dict().entries()) keys.push_back(e.first);
      return keys;
    }
    case Value::Kind::kString: {
      std::vector<Value> chars;
      const std::string& s = v.str();
      if (s.size() > kMaxStringItems) {  // count the characters before making a value of each
        uint64_t count = 0;
        for (size_t i = 0, len = 0; i < s.size(); i += len, ++count) text::decode(s, i, len);
        check_string_items(count, "iterating a string");
      }
      for (size_t i = 0, len = 0; i < s.size(); i += len) {
        text::decode(s, i, len);
        chars.push_back(Value::from_string(s.substr(i, len)));
      }
      return chars;
    }
    case Value::Kind::kIterator: {
      auto& it = v.iterator();
      std::vector<Value> rest(it.items.begin() + static_cast<std::ptrdiff_t>(it.pos), it.items.end());
      it.pos = it.items.size();
      return rest;
    }
    default:
      eval_fail("'" + v.type_name() + "' object is not iterable");
  }
}

int64_t length(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return 0;
    case Value::Kind::kString:
      return static_cast<int64_t>(text::length(v.str()));
    case Value::Kind::kSeq:
      return static_cast<int64_t>(v.seq().items.size());
    case Value::Kind::kDict:
      return static_cast<int64_t>(v.dict().size());
    case Value::Kind::kObject:
      if (auto n = v.object().attribute("length"); n && !v.object().is_namespace()) return n->get_int();
      break;
    default:
      break;
  }
  eval_fail("object of type '" + v.type_name() + "' has no len()");
}

}  // namespace hftrain::tokenizer::jinja
