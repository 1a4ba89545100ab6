// The interpreter's expressions: literals, names, attribute/item/slice access, calls, filters,
// tests, operators, `and`/`or` (returning an operand, as Python), `~`, chained comparisons, inline if.
#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/error.h"
#include "tokenizer/jinja/interpreter.h"
#include "tokenizer/jinja/interpreter_impl.h"
#include "tokenizer/jinja/operators.h"
#include "tokenizer/jinja/py_format.h"

namespace hftrain::tokenizer::jinja {

void Interpreter::eval_args(const Expr& e, size_t first, const std::shared_ptr<Scope>& scope, CallArgs& out) {
  for (size_t i = first; i < e.args.size(); ++i) out.positional.push_back(eval(*e.args[i], scope));
  for (const auto& [key, value] : e.kwargs) out.keyword.emplace_back(key, eval(*value, scope));
}

Value Interpreter::call(const Value& callee, CallArgs& args) {
  if (callee.is_callable()) return callee.callable().call(*this, args);
  require_defined(callee);
  eval_fail("'" + callee.type_name() + "' object is not callable");
}

Value Interpreter::filter(const std::string& name, const Value& input, CallArgs& args) {
  DepthGuard guard(*this);  // map() applies filters, map() among them
  step();
  return apply_filter(*this, name, input, args);
}

bool Interpreter::test(const std::string& name, const Value& input, CallArgs& args) {
  return apply_test(*this, name, input, args);
}

Value Interpreter::eval_call(const Expr& e, const std::shared_ptr<Scope>& scope, const Value* caller) {
  const Value callee = eval(*e.args[0], scope);
  CallArgs args;
  eval_args(e, 1, scope, args);
  if (caller) args.keyword.emplace_back("caller", *caller);
  line_ = e.line;
  return call(callee, args);
}

Value Interpreter::eval_filter_chain(const Expr& e, const std::shared_ptr<Scope>& scope, const Value& input) {
  const Value inner = e.args[0] ? eval_filter_chain(*e.args[0], scope, input) : input;
  CallArgs args;
  eval_args(e, 1, scope, args);
  line_ = e.line;
  return filter(e.name, inner, args);
}

Value Interpreter::eval(const Expr& e, const std::shared_ptr<Scope>& scope) {
  DepthGuard guard(*this);
  switch (e.kind) {
    case ExprKind::kConst:
      return e.value;
    case ExprKind::kName:
      return lookup(e.name, *scope);
    case ExprKind::kList:
    case ExprKind::kTuple: {
      std::vector<Value> items;
      items.reserve(e.args.size());
      for (const auto& a : e.args) items.push_back(eval(*a, scope));
      line_ = e.line;
      return Value::from_seq(std::move(items), e.kind == ExprKind::kList ? SeqKind::kList : SeqKind::kTuple);
    }
    case ExprKind::kDict: {
      Dict d;
      for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
        Value k = eval(*e.args[i], scope);
        Value v = eval(*e.args[i + 1], scope);
        line_ = e.line;
        d.set(k, std::move(v));
      }
      return Value::from_dict(std::move(d));
    }
    case ExprKind::kGetattr: {
      const Value obj = eval(*e.args[0], scope);
      line_ = e.line;
      return get_attr(obj, e.name);
    }
    case ExprKind::kGetitem: {
      const Value obj = eval(*e.args[0], scope);
      const Value key = eval(*e.args[1], scope);
      line_ = e.line;
      return get_item(obj, key);
    }
    case ExprKind::kSlice: {
      const Value obj = eval(*e.args[0], scope);
      Value bounds[3];
      for (size_t i = 0; i < 3; ++i) bounds[i] = e.args[i + 1] ? eval(*e.args[i + 1], scope) : Value::none();
      line_ = e.line;
      return get_slice(obj, bounds[0], bounds[1], bounds[2]);
    }
    case ExprKind::kCall:
      return eval_call(e, scope, nullptr);
    case ExprKind::kFilter: {
      const Value input = eval(*e.args[0], scope);
      CallArgs args;
      eval_args(e, 1, scope, args);
      line_ = e.line;
      return filter(e.name, input, args);
    }
    case ExprKind::kTest: {
      const Value input = eval(*e.args[0], scope);
      CallArgs args;
      eval_args(e, 1, scope, args);
      line_ = e.line;
      return Value::from_bool(test(e.name, input, args));
    }
    case ExprKind::kNeg:
    case ExprKind::kPos: {
      const Value v = eval(*e.args[0], scope);
      line_ = e.line;
      return e.kind == ExprKind::kNeg ? negate(v) : unary_plus(v);
    }
    case ExprKind::kNot:
      return Value::from_bool(!truthy(eval(*e.args[0], scope)));
    case ExprKind::kBinary: {
      const Value a = eval(*e.args[0], scope);
      const Value b = eval(*e.args[1], scope);
      line_ = e.line;
      return binary_op(e.op, a, b);
    }
    case ExprKind::kAnd: {
      Value a = eval(*e.args[0], scope);
      return truthy(a) ? eval(*e.args[1], scope) : a;
    }
    case ExprKind::kOr: {
      Value a = eval(*e.args[0], scope);
      return truthy(a) ? a : eval(*e.args[1], scope);
    }
    case ExprKind::kConcat: {
      std::string out;
      for (const auto& a : e.args) {
        out += to_str(eval(*a, scope));
        if (out.size() > kMaxBuiltSize) eval_fail_unsupported("string result too large");
      }
      return Value::from_string(std::move(out));
    }
    case ExprKind::kCompare: {
      Value left = eval(*e.args[0], scope);
      for (size_t i = 0; i < e.compare_ops.size(); ++i) {
        Value right = eval(*e.args[i + 1], scope);
        line_ = e.line;
        if (!compare(e.compare_ops[i], left, right)) return Value::from_bool(false);
        left = std::move(right);
      }
      return Value::from_bool(true);
    }
    case ExprKind::kCondExpr: {
      if (truthy(eval(*e.args[1], scope))) return eval(*e.args[0], scope);
      if (e.args[2]) return eval(*e.args[2], scope);
      return Value::undefined("the inline if-expression on line " + std::to_string(e.line) +
                              " evaluated to false and no else section was defined.");
    }
  }
  return Value();
}

}  // namespace hftrain::tokenizer::jinja
