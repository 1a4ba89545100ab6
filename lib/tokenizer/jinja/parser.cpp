// The Jinja parser's statements: the template body, {% if %}, {% for %}, {% set %}, {% macro %},
// {% call %}, {% filter %}, {% with %}, {% generation %} (transformers' AssistantTracker), {% break %}
// and {% continue %} (jinja2.ext.loopcontrols), {% print %}. Expressions: parser_expr.cpp.
#include "tokenizer/jinja/parser.h"

#include "tokenizer/jinja/parser_impl.h"

namespace hftrain::tokenizer::jinja {
namespace detail {
namespace {

std::string quoted_list(std::initializer_list<std::string_view> tags) {
  std::string out;
  size_t i = 0;
  for (auto t : tags) {
    if (i++) out += i == tags.size() ? " or " : ", ";
    out += "'" + std::string(t) + "'";
  }
  return out;
}

}  // namespace

bool Parser::skip_op(std::string_view op) {
  if (!is_op(op)) return false;
  advance();
  return true;
}

bool Parser::skip_name(std::string_view n) {
  if (!is_name(n)) return false;
  advance();
  return true;
}

const Token& Parser::expect_op(std::string_view op) {
  if (!is_op(op)) fail(cur(), "expected token '" + std::string(op) + "', got " + describe(cur()));
  return advance();
}

const Token& Parser::expect_name(std::string_view n) {
  if (cur().type != TokenType::kName || (!n.empty() && cur().value != n))
    fail(cur(),
         "expected " + (n.empty() ? std::string("name") : "'" + std::string(n) + "'") + ", got " + describe(cur()));
  return advance();
}

void Parser::expect(TokenType type) {
  if (cur().type == type) {
    advance();
    return;
  }
  const char* what = type == TokenType::kBlockEnd ? "end of statement block" : "end of print statement";
  fail(cur(), std::string("expected ") + what + ", got " + describe(cur()));
}

std::string Parser::describe(const Token& t) {
  switch (t.type) {
    case TokenType::kEof:
      return "end of template";
    case TokenType::kBlockEnd:
      return "end of statement block";
    case TokenType::kVariableEnd:
      return "end of print statement";
    case TokenType::kBlockBegin:
      return "begin of statement block";
    case TokenType::kVariableBegin:
      return "begin of print statement";
    case TokenType::kData:
      return "template data";
    case TokenType::kString:
      return "string";
    default:
      return "'" + t.value + "'";
  }
}

void Parser::fail(const Token& at, const std::string& message) const {
  throw TemplateError(TemplateError::Cause::kSyntax, name_, at.line, at.column, message);
}

void Parser::fail_unsupported(const Token& at, const std::string& message) const {
  throw TemplateError(TemplateError::Cause::kUnsupported, name_, at.line, at.column, message);
}

Body Parser::parse_body(std::initializer_list<std::string_view> end_tags) {
  Body body;
  while (cur().type != TokenType::kEof) {
    const Token& t = cur();
    if (t.type == TokenType::kData) {
      auto s = std::make_unique<Stmt>();
      s->kind = StmtKind::kData;
      s->line = t.line;
      s->column = t.column;
      s->text = t.value;
      body.push_back(std::move(s));
      advance();
    } else if (t.type == TokenType::kVariableBegin) {
      advance();
      auto s = std::make_unique<Stmt>();
      s->kind = StmtKind::kPrint;
      s->line = cur().line;
      s->column = cur().column;
      s->expr = parse_tuple(true);
      expect(TokenType::kVariableEnd);
      body.push_back(std::move(s));
    } else if (t.type == TokenType::kBlockBegin) {
      advance();
      if (cur().type == TokenType::kName)
        for (auto end : end_tags)
          if (cur().value == end) return body;
      body.push_back(parse_statement());
      expect(TokenType::kBlockEnd);
    } else {
      fail(t, "unexpected " + describe(t));
    }
  }
  if (end_tags.size() != 0)
    fail(cur(), "Unexpected end of template. Jinja was looking for the following tags: " + quoted_list(end_tags) + ".");
  return body;
}

Body Parser::parse_statements(std::initializer_list<std::string_view> end_tags, bool drop_needle) {
  skip_op(":");
  expect(TokenType::kBlockEnd);
  Body body = parse_body(end_tags);
  if (drop_needle) advance();
  return body;
}

StmtPtr Parser::parse_statement() {
  DepthGuard guard(*this);
  const Token& tag = cur();
  if (tag.type != TokenType::kName) fail(tag, "tag name expected");
  const std::string& n = tag.value;
  if (n == "if") return parse_if(advance());
  if (n == "for") return parse_for(advance());
  if (n == "set") return parse_set(advance());
  if (n == "macro") return parse_macro(advance());
  if (n == "call") return parse_call_block(advance());
  if (n == "filter") return parse_filter_block(advance());
  if (n == "generation") return parse_generation(advance());
  if (n == "with") return parse_with(advance());
  if (n == "break" || n == "continue") {
    if (loop_depth_ == 0) fail(tag, "'" + n + "' outside loop");
    auto s = std::make_unique<Stmt>();
    s->kind = n == "break" ? StmtKind::kBreak : StmtKind::kContinue;
    s->line = tag.line;
    s->column = tag.column;
    advance();
    return s;
  }
  if (n == "print") {
    const Token& at = advance();
    auto s = std::make_unique<Stmt>();
    s->kind = StmtKind::kPrint;
    s->line = at.line;
    s->column = at.column;
    s->expr = parse_tuple(true);
    return s;
  }
  if (n == "block" || n == "extends" || n == "include" || n == "import" || n == "from" || n == "autoescape" ||
      n == "do" || n == "trans" || n == "pluralize")
    fail_unsupported(tag, "unsupported tag `" + n + "`");
  fail(tag, "Encountered unknown tag '" + n + "'.");
}

StmtPtr Parser::parse_if(const Token& tag) {
  auto s = std::make_unique<Stmt>();
  s->kind = StmtKind::kIf;
  s->line = tag.line;
  s->column = tag.column;
  while (true) {
    ExprPtr test = parse_tuple(false);
    Body body = parse_statements({"elif", "else", "endif"}, false);
    s->branches.emplace_back(std::move(test), std::move(body));
    const Token& t = advance();
    if (t.value == "elif") continue;
    if (t.value == "else") s->else_body = parse_statements({"endif"}, true);
    break;
  }
  return s;
}

StmtPtr Parser::parse_for(const Token& tag) {
  auto s = std::make_unique<Stmt>();
  s->kind = StmtKind::kFor;
  s->line = tag.line;
  s->column = tag.column;
  s->target = parse_assign_target(true, false);
  expect_name("in");
  s->expr = parse_tuple(false);
  if (skip_name("if")) s->cond = parse_expression();
  if (is_name("recursive")) fail_unsupported(cur(), "unsupported recursive for loop (`loop(...)`)");
  ++loop_depth_;
  s->body = parse_statements({"endfor", "else"}, false);
  --loop_depth_;
  if (advance().value == "else") s->else_body = parse_statements({"endfor"}, true);
  return s;
}

StmtPtr Parser::parse_set(const Token& tag) {
  auto s = std::make_unique<Stmt>();
  s->line = tag.line;
  s->column = tag.column;
  s->target = parse_assign_target(true, true);
  if (skip_op("=")) {
    s->kind = StmtKind::kSet;
    s->expr = parse_tuple(true);
    return s;
  }
  s->kind = StmtKind::kSetBlock;
  if (is_op("|")) s->expr = parse_filter_chain(nullptr, false);
  s->body = parse_statements({"endset"}, true);
  return s;
}

void Parser::parse_signature(MacroDef& m) {
  expect_op("(");
  while (!is_op(")")) {
    if (!m.params.empty()) expect_op(",");
    const Token& name = expect_name();
    if (skip_op("=")) {
      m.defaults.push_back(parse_expression());
    } else if (!m.defaults.empty()) {
      fail(name, "non-default argument follows default argument");
    }
    m.params.push_back(name.value);
  }
  expect_op(")");
}

Body Parser::parse_macro_body(MacroDef& m, std::string_view end_tag) {
  macro_names_.emplace_back();
  const int saved_loops = loop_depth_;
  loop_depth_ = 0;
  Body body = parse_statements({end_tag}, true);
  loop_depth_ = saved_loops;
  const auto& used = macro_names_.back();
  m.uses_varargs = used.count("varargs") != 0;
  m.uses_kwargs = used.count("kwargs") != 0;
  m.uses_caller = used.count("caller") != 0;
  macro_names_.pop_back();
  return body;
}

StmtPtr Parser::parse_macro(const Token& tag) {
  auto s = std::make_unique<Stmt>();
  s->kind = StmtKind::kMacro;
  s->line = tag.line;
  s->column = tag.column;
  auto m = std::make_shared<MacroDef>();
  m->line = tag.line;
  m->name = expect_name().value;
  parse_signature(*m);
  m->body = parse_macro_body(*m, "endmacro");
  s->macro = std::move(m);
  return s;
}

StmtPtr Parser::parse_call_block(const Token& tag) {
  auto s = std::make_unique<Stmt>();
  s->kind = StmtKind::kCallBlock;
  s->line = tag.line;
  s->column = tag.column;
  auto m = std::make_shared<MacroDef>();
  m->line = tag.line;
  m->name = "caller";
  if (is_op("(")) parse_signature(*m);
  const Token& at = cur();
  s->expr = parse_expression();
  if (s->expr->kind != ExprKind::kCall) fail(at, "expected call");
  m->body = parse_macro_body(*m, "endcall");
  s->macro = std::move(m);
  return s;
}

StmtPtr Parser::parse_filter_block(const Token& tag) {
  auto s = std::make_unique<Stmt>();
  s->kind = StmtKind::kFilterBlock;
  s->line = tag.line;
  s->column = tag.column;
  s->expr = parse_filter_chain(nullptr, true);
  s->body = parse_statements({"endfilter"}, true);
  return s;
}

StmtPtr Parser::parse_generation(const Token& tag) {
  auto s = std::make_unique<Stmt>();
  s->kind = StmtKind::kGeneration;
  s->line = tag.line;
  s->column = tag.column;
  saw_generation_ = true;
  // The body is a caller macro in jinja2: {% break %} inside it is outside any loop.
  const int saved_loops = loop_depth_;
  loop_depth_ = 0;
  s->body = parse_statements({"endgeneration"}, true);
  loop_depth_ = saved_loops;
  return s;
}

StmtPtr Parser::parse_with(const Token& tag) {
  auto s = std::make_unique<Stmt>();
  s->kind = StmtKind::kWith;
  s->line = tag.line;
  s->column = tag.column;
  while (cur().type != TokenType::kBlockEnd) {
    if (!s->assignments.empty()) expect_op(",");
    Target t = parse_assign_target(true, false);
    expect_op("=");
    s->assignments.emplace_back(std::move(t), parse_expression());
  }
  s->body = parse_statements({"endwith"}, true);
  return s;
}

}  // namespace detail

std::shared_ptr<const TemplateAst> parse_template(std::string_view source, const std::string& name) {
  detail::Parser parser(tokenize(source, name), name);
  auto ast = std::make_shared<TemplateAst>();
  ast->name = name;
  ast->body = parser.parse_body({});
  ast->has_generation = parser.saw_generation();
  return ast;
}

}  // namespace hftrain::tokenizer::jinja
