// The Jinja lexer, configured as transformers configures jinja2: default delimiters ({{ }}, {% %},
// {# #}), trim_blocks (the first newline after a block or comment tag is dropped), lstrip_blocks
// (spaces and tabs before a block or comment tag at the start of a line are dropped), `-` and `+`
// whitespace control, {% raw %}, newlines normalised to \n and one trailing newline removed
// (keep_trailing_newline=False). Throws TemplateError for lexical errors.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hftrain::tokenizer::jinja {

enum class TokenType : uint8_t {
  kData,
  kVariableBegin,
  kVariableEnd,
  kBlockBegin,
  kBlockEnd,
  kName,
  kString,
  kInteger,
  kFloat,
  kOperator,
  kEof
};

struct Token {
  TokenType type = TokenType::kEof;
  std::string value;  // data, name, decoded string, operator text
  int64_t int_value = 0;
  double float_value = 0;
  int line = 1;
  int column = 1;
};

std::vector<Token> tokenize(std::string_view source, const std::string& template_name);

}  // namespace hftrain::tokenizer::jinja
