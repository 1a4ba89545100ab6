// Jinja tests (`x is defined`, `x is divisibleby 3`, `x is eq 1`), with jinja2's Python semantics:
// `number` includes bools, `integer` excludes them, `sequence` is anything with len() and indexing,
// `true`/`false` are identity with the bools, `sameas` is identity (small ints, None and bools are
// singletons as in CPython).
#include <algorithm>
#include <iterator>
#include <utility>

#include "tokenizer/jinja/args.h"
#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/error.h"
#include "tokenizer/jinja/operators.h"
#include "tokenizer/jinja/py_format.h"
#include "tokenizer/jinja/text.h"

namespace hftrain::tokenizer::jinja {
namespace {

constexpr std::string_view kTests[] = {
    "boolean",  "callable", "defined", "divisibleby", "eq",   "equalto",   "==",     "escaped",
    "even",     "false",    "filter",  "float",       "ge",   ">=",        "gt",     "greaterthan",
    ">",        "in",       "integer", "iterable",    "le",   "<=",        "lower",  "lt",
    "lessthan", "<",        "mapping", "ne",          "!=",   "none",      "number", "odd",
    "sameas",   "sequence", "string",  "test",        "true", "undefined", "upper"};

const Value& arg(const CallArgs& args, const char* test) {
  if (args.positional.size() != 1 || !args.keyword.empty())
    eval_fail(std::string("test '") + test + "' takes exactly one argument");
  return args.positional[0];
}

void no_args(const CallArgs& args, const std::string& test) {
  if (!args.positional.empty() || !args.keyword.empty()) eval_fail("test '" + test + "' takes no arguments");
}

bool same_object(const Value& a, const Value& b) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kUndefined:
      return false;
    case Value::Kind::kNone:
      return true;
    case Value::Kind::kBool:
      return a.get_bool() == b.get_bool();
    case Value::Kind::kInt:
      return a.get_int() == b.get_int() && a.get_int() >= -5 && a.get_int() <= 256;
    case Value::Kind::kFloat:
      return false;
    default:
      return a.identity() == b.identity();
  }
}

bool case_test(const Value& v, bool want_lower) {
  const std::u32string cps = text::to_u32(to_str(v));
  bool cased = false;
  for (char32_t c : cps) {
    if (want_lower ? text::is_cased_upper(c) : text::is_cased_lower(c)) return false;
    cased = cased || text::is_cased_upper(c) || text::is_cased_lower(c);
  }
  return cased;
}

}  // namespace

bool is_known_test(std::string_view name) {
  return std::find(std::begin(kTests), std::end(kTests), name) != std::end(kTests);
}

bool apply_test(Interpreter&, const std::string& name, const Value& v, CallArgs& args) {
  if (name == "defined" || name == "undefined") {
    no_args(args, name);
    return v.is_undefined() == (name == "undefined");
  }
  using Unary = bool (*)(const Value&);
  static const std::pair<std::string_view, Unary> kUnary[] = {
      {"none", [](const Value& x) { return x.is_none(); }},
      {"boolean", [](const Value& x) { return x.is_bool(); }},
      {"true", [](const Value& x) { return x.is_bool() && x.get_bool(); }},
      {"false", [](const Value& x) { return x.is_bool() && !x.get_bool(); }},
      {"integer", [](const Value& x) { return x.is_int(); }},
      {"float", [](const Value& x) { return x.is_float(); }},
      {"number", [](const Value& x) { return x.is_number(); }},
      {"string", [](const Value& x) { return x.is_string(); }},
      {"mapping", [](const Value& x) { return x.is_dict(); }},
      {"callable", [](const Value& x) { return x.is_callable(); }},
      {"escaped", [](const Value&) { return false; }},
      {"lower", [](const Value& x) { return case_test(x, true); }},
      {"upper", [](const Value& x) { return case_test(x, false); }},
  };
  for (const auto& [test_name, fn] : kUnary) {
    if (name != test_name) continue;
    no_args(args, name);
    return fn(v);
  }
  if (name == "sequence") {
    no_args(args, name);
    return v.is_undefined() || v.is_string() || v.is_dict() ||
           (v.is_seq() && (v.seq().kind == SeqKind::kList || v.seq().kind == SeqKind::kTuple));
  }
  if (name == "iterable") {
    no_args(args, name);
    return v.is_undefined() || v.is_string() || v.is_seq() || v.is_dict() || v.is_iterator() ||
           (v.is_object() && !v.object().is_namespace());
  }
  if (name == "odd" || name == "even") {
    no_args(args, name);
    const Value r = binary_op(BinaryOp::kMod, v, Value::from_int(2));
    return equals(r, Value::from_int(name == "odd" ? 1 : 0));
  }
  if (name == "divisibleby") return equals(binary_op(BinaryOp::kMod, v, arg(args, "divisibleby")), Value::from_int(0));
  if (name == "filter") return is_known_filter(to_str(v));
  if (name == "test") return is_known_test(to_str(v));
  if (name == "sameas") return same_object(v, arg(args, "sameas"));
  if (name == "in") return contains(arg(args, "in"), v);
  if (name == "eq" || name == "equalto" || name == "==") return compare(CompareOp::kEq, v, arg(args, "eq"));
  if (name == "ne" || name == "!=") return compare(CompareOp::kNe, v, arg(args, "ne"));
  if (name == "lt" || name == "lessthan" || name == "<") return compare(CompareOp::kLt, v, arg(args, "lt"));
  if (name == "le" || name == "<=") return compare(CompareOp::kLe, v, arg(args, "le"));
  if (name == "gt" || name == "greaterthan" || name == ">") return compare(CompareOp::kGt, v, arg(args, "gt"));
  if (name == "ge" || name == ">=") return compare(CompareOp::kGe, v, arg(args, "ge"));
  eval_fail_unsupported("unsupported test `" + name + "`");
}

}  // namespace hftrain::tokenizer::jinja
