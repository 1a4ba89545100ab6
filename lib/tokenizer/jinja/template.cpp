// The public chat template interface: parse once, render many times.
#include "tokenizer/jinja/template.h"

#include "tokenizer/jinja/interpreter.h"
#include "tokenizer/jinja/parser.h"

namespace hftrain::tokenizer::jinja {

Template Template::parse(std::string_view source, std::string name) {
  return Template(parse_template(source, name));
}

RenderResult Template::render(const nlohmann::ordered_json& context) const {
  Interpreter interp(*ast_);
  RenderOutput out = interp.render(context);
  return RenderResult{std::move(out.text), std::move(out.generation_spans)};
}

bool Template::has_generation_blocks() const {
  return ast_->has_generation;
}

const std::string& Template::name() const {
  return ast_->name;
}

}  // namespace hftrain::tokenizer::jinja
