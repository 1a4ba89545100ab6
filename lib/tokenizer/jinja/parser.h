// The Jinja parser: tokens to a TemplateAst, with jinja2's grammar and operator precedence
// (condexpr < or < and < not < compare < +,- < ~ < *,/,//,% < ** < unary < postfix, filters and
// tests). Filters, tests and tags outside the supported subset are refused here, naming the construct
// and its line. Statement and expression nesting is limited to kMaxNestingDepth.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "tokenizer/jinja/ast.h"

namespace hftrain::tokenizer::jinja {

inline constexpr int kMaxNestingDepth = 256;

std::shared_ptr<const TemplateAst> parse_template(std::string_view source, const std::string& name);

}  // namespace hftrain::tokenizer::jinja
