// The Jinja parser's expressions from tuples down to unary operators, following jinja2's grammar and
// precedence (parser.h), and assignment targets. Primaries, postfix operators, filters and tests:
// parser_primary.cpp.
#include <algorithm>

#include "tokenizer/jinja/parser_impl.h"

namespace hftrain::tokenizer::jinja::detail {

ExprPtr Parser::make(ExprKind kind, const Token& at) const {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->line = at.line;
  e->column = at.column;
  return e;
}

ExprPtr Parser::finish(ExprPtr e) const {
  int depth = 0;
  for (const auto& a : e->args)
    if (a) depth = std::max(depth, a->depth);
  for (const auto& kw : e->kwargs) depth = std::max(depth, kw.second->depth);
  e->depth = depth + 1;
  if (e->depth > kMaxNestingDepth)
    throw TemplateError(TemplateError::Cause::kLimit, name_, e->line, e->column,
                        "expression nests deeper than " + std::to_string(kMaxNestingDepth) + " levels");
  return e;
}

// jinja2 also takes "extra end rules" (`in` after a for target, `recursive` after its iterable) but
// its check never matches them (Parser.is_tuple_end passes the tuple to test_any unpacked), so a
// trailing comma before `in` is a syntax error there; so it is here.
bool Parser::is_tuple_end() const {
  const auto t = cur().type;
  return t == TokenType::kVariableEnd || t == TokenType::kBlockEnd || is_op(")");
}

ExprPtr Parser::parse_tuple(bool with_condexpr, bool explicit_parens) {
  const Token& at = cur();
  std::vector<ExprPtr> items;
  bool is_tuple = false;
  while (true) {
    if (!items.empty()) expect_op(",");
    if (is_tuple_end()) break;
    items.push_back(parse_expression(with_condexpr));
    if (is_op(",")) {
      is_tuple = true;
    } else {
      break;
    }
  }
  if (!is_tuple) {
    if (!items.empty()) return std::move(items[0]);
    if (!explicit_parens) fail(cur(), "Expected an expression, got " + describe(cur()));
  }
  auto e = make(ExprKind::kTuple, at);
  e->args = std::move(items);
  return finish(std::move(e));
}

Target Parser::parse_assign_target(bool with_tuple, bool with_namespace) {
  auto one = [&](auto& self) -> Target {
    const Token& t = cur();
    if (t.type == TokenType::kName) {
      if (t.value == "true" || t.value == "false" || t.value == "True" || t.value == "False" || t.value == "none" ||
          t.value == "None")
        fail(t, "can't assign to 'const'");
      advance();
      Target target;
      target.name = t.value;
      if (with_namespace && is_op(".")) {
        advance();
        target.kind = Target::Kind::kNamespaceAttr;
        target.attr = expect_name().value;
      }
      return target;
    }
    if (t.type == TokenType::kOperator && t.value == "(") {
      DepthGuard guard(*this);
      advance();
      Target target;
      target.kind = Target::Kind::kTuple;
      while (!is_op(")")) {
        if (!target.items.empty()) expect_op(",");
        if (is_op(")")) break;
        target.items.push_back(self(self));
        if (!is_op(",") && target.items.size() == 1) {
          Target inner = std::move(target.items[0]);
          expect_op(")");
          return inner;
        }
      }
      expect_op(")");
      return target;
    }
    fail(t, "can't assign to " + describe(t));
  };
  if (!with_tuple) return one(one);
  Target tuple;
  tuple.kind = Target::Kind::kTuple;
  bool is_tuple = false;
  while (true) {
    if (!tuple.items.empty()) expect_op(",");
    if (is_tuple_end()) break;
    tuple.items.push_back(one(one));
    if (is_op(",")) {
      is_tuple = true;
    } else {
      break;
    }
  }
  if (!is_tuple) {
    if (tuple.items.empty()) fail(cur(), "Expected an expression, got " + describe(cur()));
    return std::move(tuple.items[0]);
  }
  return tuple;
}

ExprPtr Parser::parse_expression(bool with_condexpr) {
  return with_condexpr ? parse_condexpr() : parse_or();
}

ExprPtr Parser::parse_condexpr() {
  DepthGuard guard(*this);
  ExprPtr expr1 = parse_or();
  while (is_name("if")) {
    const Token& at = advance();
    ExprPtr test = parse_or();
    ExprPtr expr3;
    if (skip_name("else")) expr3 = parse_condexpr();
    auto e = make(ExprKind::kCondExpr, at);
    e->line = expr1->line;
    e->args.push_back(std::move(expr1));
    e->args.push_back(std::move(test));
    e->args.push_back(std::move(expr3));
    expr1 = finish(std::move(e));
  }
  return expr1;
}

ExprPtr Parser::parse_or() {
  ExprPtr left = parse_and();
  while (is_name("or")) {
    auto e = make(ExprKind::kOr, advance());
    e->args.push_back(std::move(left));
    e->args.push_back(parse_and());
    left = finish(std::move(e));
  }
  return left;
}

ExprPtr Parser::parse_and() {
  ExprPtr left = parse_not();
  while (is_name("and")) {
    auto e = make(ExprKind::kAnd, advance());
    e->args.push_back(std::move(left));
    e->args.push_back(parse_not());
    left = finish(std::move(e));
  }
  return left;
}

ExprPtr Parser::parse_not() {
  if (is_name("not")) {
    DepthGuard guard(*this);
    auto e = make(ExprKind::kNot, advance());
    e->args.push_back(parse_not());
    return finish(std::move(e));
  }
  return parse_compare();
}

ExprPtr Parser::parse_compare() {
  const Token& at = cur();
  ExprPtr expr = parse_math1();
  ExprPtr cmp;
  while (true) {
    CompareOp op;
    if (is_op("==")) {
      op = CompareOp::kEq;
    } else if (is_op("!=")) {
      op = CompareOp::kNe;
    } else if (is_op("<")) {
      op = CompareOp::kLt;
    } else if (is_op("<=")) {
      op = CompareOp::kLe;
    } else if (is_op(">")) {
      op = CompareOp::kGt;
    } else if (is_op(">=")) {
      op = CompareOp::kGe;
    } else if (is_name("in")) {
      op = CompareOp::kIn;
    } else if (is_name("not") && peek().type == TokenType::kName && peek().value == "in") {
      advance();
      op = CompareOp::kNotIn;
    } else {
      break;
    }
    advance();
    if (!cmp) {
      cmp = make(ExprKind::kCompare, at);
      cmp->args.push_back(std::move(expr));
    }
    cmp->compare_ops.push_back(op);
    cmp->args.push_back(parse_math1());
  }
  return cmp ? finish(std::move(cmp)) : std::move(expr);
}

ExprPtr Parser::parse_math1() {
  ExprPtr left = parse_concat();
  while (is_op("+") || is_op("-")) {
    auto e = make(ExprKind::kBinary, cur());
    e->op = advance().value == "+" ? BinaryOp::kAdd : BinaryOp::kSub;
    e->args.push_back(std::move(left));
    e->args.push_back(parse_concat());
    left = finish(std::move(e));
  }
  return left;
}

ExprPtr Parser::parse_concat() {
  const Token& at = cur();
  ExprPtr first = parse_math2();
  if (!is_op("~")) return first;
  auto e = make(ExprKind::kConcat, at);
  e->args.push_back(std::move(first));
  while (skip_op("~")) e->args.push_back(parse_math2());
  return finish(std::move(e));
}

ExprPtr Parser::parse_math2() {
  ExprPtr left = parse_pow();
  while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
    auto e = make(ExprKind::kBinary, cur());
    const std::string& op = advance().value;
    e->op = op == "*" ? BinaryOp::kMul : op == "/" ? BinaryOp::kDiv : op == "//" ? BinaryOp::kFloorDiv : BinaryOp::kMod;
    e->args.push_back(std::move(left));
    e->args.push_back(parse_pow());
    left = finish(std::move(e));
  }
  return left;
}

ExprPtr Parser::parse_pow() {
  ExprPtr left = parse_unary(true);
  while (is_op("**")) {
    auto e = make(ExprKind::kBinary, advance());
    e->op = BinaryOp::kPow;
    e->args.push_back(std::move(left));
    e->args.push_back(parse_unary(true));
    left = finish(std::move(e));
  }
  return left;
}

ExprPtr Parser::parse_unary(bool with_filter) {
  DepthGuard guard(*this);
  ExprPtr node;
  if (is_op("-") || is_op("+")) {
    auto e = make(is_op("-") ? ExprKind::kNeg : ExprKind::kPos, cur());
    advance();
    e->args.push_back(parse_unary(false));
    node = finish(std::move(e));
  } else {
    node = parse_primary();
  }
  node = parse_postfix(std::move(node));
  if (with_filter) node = parse_filter_expr(std::move(node));
  return node;
}

}  // namespace hftrain::tokenizer::jinja::detail
