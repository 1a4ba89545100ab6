// The Jinja parser's primaries and what follows them: literals, names, lists, dicts, parenthesised
// tuples, attribute/item/slice access, calls with keyword arguments, filters and tests (unknown ones
// refused here, named).
#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/parser_impl.h"

namespace hftrain::tokenizer::jinja::detail {

ExprPtr Parser::parse_primary() {
  const Token& t = cur();
  if (t.type == TokenType::kName) {
    advance();
    auto e = make(ExprKind::kConst, t);
    if (t.value == "true" || t.value == "True") {
      e->value = Value::from_bool(true);
    } else if (t.value == "false" || t.value == "False") {
      e->value = Value::from_bool(false);
    } else if (t.value == "none" || t.value == "None") {
      e->value = Value::none();
    } else {
      e->kind = ExprKind::kName;
      e->name = t.value;
      if (!macro_names_.empty()) macro_names_.back().insert(t.value);
    }
    return e;
  }
  if (t.type == TokenType::kString) {
    auto e = make(ExprKind::kConst, t);
    std::string s;
    while (cur().type == TokenType::kString) s += advance().value;
    e->value = Value::from_string(std::move(s));
    return e;
  }
  if (t.type == TokenType::kInteger || t.type == TokenType::kFloat) {
    auto e = make(ExprKind::kConst, t);
    e->value = t.type == TokenType::kInteger ? Value::from_int(t.int_value) : Value::from_float(t.float_value);
    advance();
    return e;
  }
  if (is_op("(")) {
    advance();
    ExprPtr e = parse_tuple(true, true);
    expect_op(")");
    return e;
  }
  if (is_op("[")) {
    auto e = make(ExprKind::kList, advance());
    while (!is_op("]")) {
      if (!e->args.empty()) expect_op(",");
      if (is_op("]")) break;
      e->args.push_back(parse_expression());
    }
    expect_op("]");
    return finish(std::move(e));
  }
  if (is_op("{")) {
    auto e = make(ExprKind::kDict, advance());
    while (!is_op("}")) {
      if (!e->args.empty()) expect_op(",");
      if (is_op("}")) break;
      e->args.push_back(parse_expression());
      expect_op(":");
      e->args.push_back(parse_expression());
    }
    expect_op("}");
    return finish(std::move(e));
  }
  fail(t, "unexpected " + describe(t));
}

ExprPtr Parser::parse_postfix(ExprPtr node) {
  while (true) {
    if (is_op(".") || is_op("[")) {
      node = parse_subscript(std::move(node));
    } else if (is_op("(")) {
      node = parse_call(std::move(node));
    } else {
      return node;
    }
  }
}

ExprPtr Parser::parse_filter_expr(ExprPtr node) {
  while (true) {
    if (is_op("|")) {
      node = parse_filter_chain(std::move(node), false);
    } else if (is_name("is")) {
      node = parse_test(std::move(node));
    } else if (is_op("(")) {
      node = parse_call(std::move(node));
    } else {
      return node;
    }
  }
}

ExprPtr Parser::parse_subscript(ExprPtr node) {
  const Token& t = advance();
  if (t.value == ".") {
    const Token& attr = cur();
    if (attr.type == TokenType::kName) {
      advance();
      auto e = make(ExprKind::kGetattr, t);
      e->name = attr.value;
      e->args.push_back(std::move(node));
      return finish(std::move(e));
    }
    if (attr.type != TokenType::kInteger) fail(attr, "expected name or number");
    advance();
    auto key = make(ExprKind::kConst, attr);
    key->value = Value::from_int(attr.int_value);
    auto e = make(ExprKind::kGetitem, t);
    e->args.push_back(std::move(node));
    e->args.push_back(std::move(key));
    return finish(std::move(e));
  }
  std::vector<ExprPtr> args;
  while (!is_op("]")) {
    if (!args.empty()) expect_op(",");
    args.push_back(parse_subscribed());
  }
  expect_op("]");
  if (args.size() == 1 && args[0]->kind == ExprKind::kSlice) {
    ExprPtr slice = std::move(args[0]);
    slice->line = t.line;
    slice->args[0] = std::move(node);
    return finish(std::move(slice));
  }
  auto e = make(ExprKind::kGetitem, t);
  e->args.push_back(std::move(node));
  if (args.size() == 1) {
    e->args.push_back(std::move(args[0]));
  } else {
    for (const auto& a : args)
      if (a->kind == ExprKind::kSlice) fail_unsupported(t, "unsupported multi-dimensional subscript with slices");
    auto tuple = make(ExprKind::kTuple, t);
    tuple->args = std::move(args);
    e->args.push_back(finish(std::move(tuple)));
  }
  return finish(std::move(e));
}

ExprPtr Parser::parse_subscribed() {
  const Token& at = cur();
  ExprPtr start;
  if (is_op(":")) {
    advance();
  } else {
    start = parse_expression();
    if (!is_op(":")) return start;
    advance();
  }
  auto e = make(ExprKind::kSlice, at);
  e->args.push_back(nullptr);  // the object, filled in by parse_subscript
  e->args.push_back(std::move(start));
  if (is_op(":") || is_op("]") || is_op(",")) {
    e->args.push_back(nullptr);
  } else {
    e->args.push_back(parse_expression());
  }
  if (skip_op(":") && !is_op("]") && !is_op(",")) {
    e->args.push_back(parse_expression());
  } else {
    e->args.push_back(nullptr);
  }
  return e;
}

ExprPtr Parser::parse_call(ExprPtr callee) {
  auto e = make(ExprKind::kCall, cur());
  e->args.push_back(std::move(callee));
  parse_call_args(*e);
  return finish(std::move(e));
}

void Parser::parse_call_args(Expr& into) {
  const Token& open = expect_op("(");
  bool require_comma = false;
  while (!is_op(")")) {
    if (require_comma) {
      expect_op(",");
      if (is_op(")")) break;
    }
    if (is_op("*") || is_op("**")) fail_unsupported(cur(), "unsupported `*args`/`**kwargs` in a call");
    if (cur().type == TokenType::kName && peek().type == TokenType::kOperator && peek().value == "=") {
      std::string key = advance().value;
      advance();
      into.kwargs.emplace_back(std::move(key), parse_expression());
    } else {
      if (!into.kwargs.empty()) fail(open, "invalid syntax for function call expression");
      into.args.push_back(parse_expression());
    }
    require_comma = true;
  }
  expect_op(")");
}

ExprPtr Parser::parse_filter_chain(ExprPtr input, bool start_inline) {
  while (is_op("|") || start_inline) {
    if (!start_inline) advance();
    start_inline = false;
    const Token& name = expect_name();
    if (is_op(".")) fail_unsupported(name, "unsupported dotted filter name");
    if (!is_known_filter(name.value)) fail_unsupported(name, "unsupported filter `" + name.value + "`");
    auto e = make(ExprKind::kFilter, name);
    e->name = name.value;
    e->args.push_back(std::move(input));
    if (is_op("(")) parse_call_args(*e);
    input = finish(std::move(e));
  }
  return input;
}

ExprPtr Parser::parse_test(ExprPtr node) {
  const Token& is = advance();
  const bool negated = skip_name("not");
  const Token& name = expect_name();
  if (is_op(".")) fail_unsupported(name, "unsupported dotted test name");
  if (!is_known_test(name.value)) fail_unsupported(name, "unsupported test `" + name.value + "`");
  auto e = make(ExprKind::kTest, is);
  e->name = name.value;
  e->args.push_back(std::move(node));
  if (is_op("(")) {
    parse_call_args(*e);
  } else {
    const Token& t = cur();
    const bool starts_arg = t.type == TokenType::kName || t.type == TokenType::kString ||
                            t.type == TokenType::kInteger || t.type == TokenType::kFloat || is_op("(") || is_op("[") ||
                            is_op("{");
    if (starts_arg && !is_name("else") && !is_name("or") && !is_name("and")) {
      if (is_name("is")) fail(t, "You cannot chain multiple tests with is");
      DepthGuard guard(*this);
      e->args.push_back(parse_postfix(parse_primary()));
    }
  }
  ExprPtr test = finish(std::move(e));
  if (!negated) return test;
  auto n = make(ExprKind::kNot, is);
  n->args.push_back(std::move(test));
  return finish(std::move(n));
}

}  // namespace hftrain::tokenizer::jinja::detail
