// The parser's internals, shared by parser.cpp (statements) and parser_expr.cpp (expressions).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "tokenizer/jinja/ast.h"
#include "tokenizer/jinja/error.h"
#include "tokenizer/jinja/lexer.h"
#include "tokenizer/jinja/parser.h"

namespace hftrain::tokenizer::jinja::detail {

class Parser {
 public:
  Parser(std::vector<Token> tokens, std::string name) : tokens_(std::move(tokens)), name_(std::move(name)) {}

  Body parse_body(std::initializer_list<std::string_view> end_tags);
  bool saw_generation() const { return saw_generation_; }

  // Expressions (parser_expr.cpp).
  ExprPtr parse_tuple(bool with_condexpr = true, bool explicit_parens = false);
  ExprPtr parse_expression(bool with_condexpr = true);
  ExprPtr parse_filter_chain(ExprPtr input, bool start_inline);
  Target parse_assign_target(bool with_tuple, bool with_namespace);

 private:
  // Token stream.
  const Token& cur() const { return tokens_[pos_]; }
  const Token& peek() const { return tokens_[std::min(pos_ + 1, tokens_.size() - 1)]; }
  const Token& advance() {
    const Token& t = tokens_[pos_];
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return t;
  }
  bool is_op(std::string_view op) const { return cur().type == TokenType::kOperator && cur().value == op; }
  bool is_name(std::string_view n) const { return cur().type == TokenType::kName && cur().value == n; }
  bool skip_op(std::string_view op);
  bool skip_name(std::string_view n);
  const Token& expect_op(std::string_view op);
  const Token& expect_name(std::string_view n = {});
  void expect(TokenType type);
  static std::string describe(const Token& t);

  [[noreturn]] void fail(const Token& at, const std::string& message) const;
  [[noreturn]] void fail_unsupported(const Token& at, const std::string& message) const;

  // Nesting guard.
  struct DepthGuard {
    explicit DepthGuard(Parser& p) : p_(p) {
      if (++p_.depth_ > kMaxNestingDepth)
        p_.fail(p_.cur(), "template nests deeper than " + std::to_string(kMaxNestingDepth) + " levels");
    }
    ~DepthGuard() { --p_.depth_; }
    DepthGuard(const DepthGuard&) = delete;
    DepthGuard& operator=(const DepthGuard&) = delete;
    Parser& p_;
  };

  // Statements (parser.cpp).
  StmtPtr parse_statement();
  Body parse_statements(std::initializer_list<std::string_view> end_tags, bool drop_needle);
  StmtPtr parse_if(const Token& tag);
  StmtPtr parse_for(const Token& tag);
  StmtPtr parse_set(const Token& tag);
  StmtPtr parse_macro(const Token& tag);
  StmtPtr parse_call_block(const Token& tag);
  StmtPtr parse_filter_block(const Token& tag);
  StmtPtr parse_generation(const Token& tag);
  StmtPtr parse_with(const Token& tag);
  void parse_signature(MacroDef& m);
  Body parse_macro_body(MacroDef& m, std::string_view end_tag);

  // Expressions (parser_expr.cpp).
  ExprPtr parse_condexpr();
  ExprPtr parse_or();
  ExprPtr parse_and();
  ExprPtr parse_not();
  ExprPtr parse_compare();
  ExprPtr parse_math1();
  ExprPtr parse_concat();
  ExprPtr parse_math2();
  ExprPtr parse_pow();
  ExprPtr parse_unary(bool with_filter);
  ExprPtr parse_primary();
  ExprPtr parse_postfix(ExprPtr node);
  ExprPtr parse_filter_expr(ExprPtr node);
  ExprPtr parse_subscript(ExprPtr node);
  ExprPtr parse_subscribed();
  ExprPtr parse_test(ExprPtr node);
  ExprPtr parse_call(ExprPtr callee);
  void parse_call_args(Expr& into);
  bool is_tuple_end() const;
  ExprPtr make(ExprKind kind, const Token& at) const;
  // Sets e->depth from its children; fails past kMaxNestingDepth (left-associative chains such as
  // a + b + c build deep trees without recursing in the parser).
  ExprPtr finish(ExprPtr e) const;

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  std::string name_;
  int depth_ = 0;
  int loop_depth_ = 0;
  bool saw_generation_ = false;
  std::vector<std::set<std::string>> macro_names_;  // names read inside each macro being parsed
};

}  // namespace hftrain::tokenizer::jinja::detail
