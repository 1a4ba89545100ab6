// The Jinja lexer (see lexer.h); it follows jinja2's lexing rules, including where whitespace
// control strips and which newline trim_blocks drops.
#include "tokenizer/jinja/lexer.h"

#include <algorithm>

#include "tokenizer/jinja/error.h"
#include "tokenizer/jinja/literals.h"
#include "tokenizer/jinja/text.h"

namespace hftrain::tokenizer::jinja {
namespace {

constexpr const char* kOperators[] = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/", "*", "%", "~", "[",
                                      "]",  "(",  ")",  "{",  "}",  "=",  ".", ":", "|", ",", ";", "<", ">"};

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_name_char(char c) {
  return is_name_start(c) || is_digit(c);
}

class Lexer {
 public:
  Lexer(std::string_view source, const std::string& name) : name_(name) {
    // Newlines normalised to \n; one trailing newline dropped.
    src_.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
      if (source[i] == '\r') {
        src_ += '\n';
        if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
      } else {
        src_ += source[i];
      }
    }
    if (!src_.empty() && src_.back() == '\n') src_.pop_back();
    line_starts_.push_back(0);
    for (size_t i = 0; i < src_.size(); ++i)
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
  }

  std::vector<Token> run() {
    while (pos_ < src_.size()) root_step();
    push(TokenType::kEof, src_.size());
    return std::move(tokens_);
  }

 private:
  [[noreturn]] void fail(size_t at, const std::string& message) {
    throw TemplateError(TemplateError::Cause::kSyntax, name_, line_of(at), column_of(at), message);
  }
  int line_of(size_t at) const {
    return static_cast<int>(std::upper_bound(line_starts_.begin(), line_starts_.end(), at) - line_starts_.begin());
  }
  int column_of(size_t at) const {
    const auto line = static_cast<size_t>(line_of(at));
    return static_cast<int>(at - line_starts_[line - 1] + 1);
  }
  Token& push(TokenType type, size_t at, std::string value = {}) {
    Token t;
    t.type = type;
    t.value = std::move(value);
    t.line = line_of(at);
    t.column = column_of(at);
    tokens_.push_back(std::move(t));
    return tokens_.back();
  }

  // Python's `\s*` from `at`; returns the end.
  size_t skip_space(size_t at) const {
    while (at < src_.size()) {
      size_t len = 0;
      if (!text::is_space(text::decode(src_, at, len))) break;
      at += len;
    }
    return at;
  }
  bool starts(size_t at, std::string_view s) const { return src_.compare(at, s.size(), s) == 0; }

  // Emits the text before a tag after whitespace control: `-` strips all whitespace, lstrip_blocks the
  // spaces and tabs between the last newline and a block or comment tag.
  void emit_data(size_t begin, size_t end, char sign, bool lstrip_applies) {
    std::string_view text(src_.data() + begin, end - begin);
    if (sign == '-') {
      size_t e = text.size();
      const std::u32string cps = text::to_u32(text);
      size_t k = cps.size();
      while (k > 0 && text::is_space(cps[k - 1])) --k;
      e = text::byte_offset(text, k);
      text = text.substr(0, e);
    } else if (sign != '+' && lstrip_applies) {
      const size_t nl = text.rfind('\n');
      const size_t l_pos = nl == std::string_view::npos ? 0 : nl + 1;
      if ((l_pos > 0 || line_starting_) && l_pos < text.size()) {
        bool all_space = true;
        for (size_t i = l_pos, len = 0; i < text.size() && all_space; i += len)
          all_space = text::is_space(text::decode(text, i, len));
        if (all_space) text = text.substr(0, l_pos);
      }
    }
    if (!text.empty()) push(TokenType::kData, begin, std::string(text));
  }

  // At `at`: a raw-begin tag `{%[-+]? raw (-%}\s*|%})`? Returns its end, or npos.
  size_t match_raw_begin(size_t at) const {
    size_t p = at + 2;
    if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) ++p;
    p = skip_space(p);
    if (!starts(p, "raw")) return std::string::npos;
    p = skip_space(p + 3);
    if (starts(p, "-%}")) return skip_space(p + 3);
    if (starts(p, "%}")) return p + 2;
    return std::string::npos;
  }

  void root_step() {
    size_t tag = pos_;
    while (true) {
      tag = src_.find('{', tag);
      if (tag == std::string::npos || tag + 1 >= src_.size()) {
        emit_data(pos_, src_.size(), 0, false);
        pos_ = src_.size();
        return;
      }
      const char k = src_[tag + 1];
      if (k == '{' || k == '%' || k == '#') break;
      ++tag;
    }
    const char kind = src_[tag + 1];
    const char sign = tag + 2 < src_.size() && (src_[tag + 2] == '-' || src_[tag + 2] == '+') ? src_[tag + 2] : 0;
    emit_data(pos_, tag, sign, kind != '{');
    line_starting_ = false;
    if (kind == '%') {
      if (const size_t raw_end = match_raw_begin(tag); raw_end != std::string::npos) {
        line_starting_ = src_[raw_end - 1] == '\n';
        raw_body(raw_end);
        return;
      }
    }
    pos_ = tag + 2 + (sign ? 1 : 0);
    if (kind == '#') {
      comment();
    } else {
      tag_body(kind == '%', tag);
    }
  }

  void comment() {
    const size_t close = src_.find("#}", pos_);
    if (close == std::string::npos) fail(pos_, "Missing end of comment tag");
    size_t end;
    if (close > pos_ && src_[close - 1] == '-')
      end = skip_space(close + 2);
    else if (close > pos_ && src_[close - 1] == '+')
      end = close + 2;
    else
      end = close + 2 + (close + 2 < src_.size() && src_[close + 2] == '\n' ? 1 : 0);
    line_starting_ = end > 0 && src_[end - 1] == '\n';
    pos_ = end;
  }

  void raw_body(size_t begin) {
    size_t search = begin;
    while (true) {
      const size_t at = src_.find("{%", search);
      if (at == std::string::npos) fail(begin, "Missing end of raw directive");
      size_t p = at + 2;
      const char sign = p < src_.size() && (src_[p] == '-' || src_[p] == '+') ? src_[p] : 0;
      if (sign) ++p;
      p = skip_space(p);
      if (starts(p, "endraw")) {
        p = skip_space(p + 6);
        size_t end = std::string::npos;
        if (starts(p, "+%}"))
          end = p + 3;
        else if (starts(p, "-%}"))
          end = skip_space(p + 3);
        else if (starts(p, "%}"))
          end = p + 2 + (p + 2 < src_.size() && src_[p + 2] == '\n' ? 1 : 0);
        if (end != std::string::npos) {
          emit_data(begin, at, sign, true);
          line_starting_ = src_[end - 1] == '\n';
          pos_ = end;
          return;
        }
      }
      search = at + 1;
    }
  }

  // Tokens between `{%`/`{{` and the closing delimiter.
  void tag_body(bool block, size_t begin) {
    push(block ? TokenType::kBlockBegin : TokenType::kVariableBegin, begin);
    std::vector<char> balance;
    while (true) {
      if (pos_ >= src_.size()) return;  // the parser reports the unexpected end
      if (balance.empty()) {
        size_t end = std::string::npos;
        if (block) {
          if (starts(pos_, "+%}"))
            end = pos_ + 3;
          else if (starts(pos_, "-%}"))
            end = skip_space(pos_ + 3);
          else if (starts(pos_, "%}"))
            end = pos_ + 2 + (pos_ + 2 < src_.size() && src_[pos_ + 2] == '\n' ? 1 : 0);
        } else {
          if (starts(pos_, "-}}"))
            end = skip_space(pos_ + 3);
          else if (starts(pos_, "}}"))
            end = pos_ + 2;
        }
        if (end != std::string::npos) {
          push(block ? TokenType::kBlockEnd : TokenType::kVariableEnd, pos_);
          line_starting_ = src_[end - 1] == '\n';
          pos_ = end;
          return;
        }
      }
      const size_t after_space = skip_space(pos_);
      if (after_space != pos_) {
        pos_ = after_space;
        continue;
      }
      if (lex_number() || lex_name() || lex_string()) continue;
      lex_operator(balance);
    }
  }

  bool lex_number() {
    if (!is_digit(src_[pos_])) return false;
    NumberLiteral n = scan_number(src_, pos_);
    Token& t = push(n.is_float ? TokenType::kFloat : TokenType::kInteger, pos_, src_.substr(pos_, n.end - pos_));
    if (n.overflow)
      throw TemplateError(TemplateError::Cause::kUnsupported, name_, t.line, t.column,
                          "integer literal beyond 64 bits: " + t.value);
    t.int_value = n.int_value;
    t.float_value = n.float_value;
    pos_ = n.end;
    return true;
  }

  bool lex_name() {
    const auto c = static_cast<unsigned char>(src_[pos_]);
    if (c >= 0x80)
      throw TemplateError(TemplateError::Cause::kUnsupported, name_, line_of(pos_), column_of(pos_),
                          "non-ASCII names are not supported");
    if (!is_name_start(src_[pos_])) return false;
    size_t end = pos_;
    while (end < src_.size() && is_name_char(src_[end])) ++end;
    push(TokenType::kName, pos_, src_.substr(pos_, end - pos_));
    pos_ = end;
    return true;
  }

  bool lex_string() {
    const char quote = src_[pos_];
    if (quote != '\'' && quote != '"') return false;
    size_t p = pos_ + 1;
    while (p < src_.size() && src_[p] != quote) p += src_[p] == '\\' ? 2u : 1u;
    if (p >= src_.size()) fail(pos_, std::string("unexpected char '") + quote + "'");
    Token& t = push(TokenType::kString, pos_);
    try {
      t.value = unescape_string_literal(std::string_view(src_).substr(pos_ + 1, p - pos_ - 1));
    } catch (const LiteralError& e) {
      throw TemplateError(e.unsupported ? TemplateError::Cause::kUnsupported : TemplateError::Cause::kSyntax, name_,
                          t.line, t.column, e.message);
    }
    pos_ = p + 1;
    return true;
  }

  void lex_operator(std::vector<char>& balance) {
    for (const char* op : kOperators) {
      const std::string_view o(op);
      if (!starts(pos_, o)) continue;
      if (o == "(" || o == "[" || o == "{") {
        balance.push_back(o == "(" ? ')' : o == "[" ? ']' : '}');
      } else if (o == ")" || o == "]" || o == "}") {
        if (balance.empty()) fail(pos_, "unexpected '" + std::string(o) + "'");
        const char expected = balance.back();
        balance.pop_back();
        if (expected != o[0]) fail(pos_, "unexpected '" + std::string(o) + "', expected '" + expected + "'");
      }
      push(TokenType::kOperator, pos_, std::string(o));
      pos_ += o.size();
      return;
    }
    size_t len = 0;
    text::decode(src_, pos_, len);
    fail(pos_, "unexpected char '" + src_.substr(pos_, len) + "'");
  }

  std::string src_;
  const std::string& name_;
  std::vector<size_t> line_starts_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  bool line_starting_ = true;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source, const std::string& template_name) {
  return Lexer(source, template_name).run();
}

}  // namespace hftrain::tokenizer::jinja
