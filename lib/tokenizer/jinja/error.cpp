// TemplateError's message: "chat template `NAME`, line L, column C: MESSAGE" plus a hint per cause.
#include "tokenizer/jinja/error.h"

namespace hftrain::tokenizer::jinja {
namespace {

std::string where(const std::string& name, int line, int column) {
  std::string out = "chat template `" + name + "`";
  if (line > 0) out += ", line " + std::to_string(line);
  if (column > 0) out += ", column " + std::to_string(column);
  return out;
}

std::string hint_for(TemplateError::Cause cause) {
  switch (cause) {
    case TemplateError::Cause::kSyntax:
      return "fix the template's Jinja syntax at that line";
    case TemplateError::Cause::kUnsupported:
      return "hftrain renders the Jinja subset that Hugging Face chat templates use (lib/tokenizer/jinja/template.h "
             "lists it); rewrite that part of the template with supported constructs";
    case TemplateError::Cause::kRaised:
      return "the chat template rejected this conversation (raise_exception); check the roles and their order";
    case TemplateError::Cause::kRuntime:
      return "the template applied an operation to a value of the wrong type; check the conversation's fields";
    case TemplateError::Cause::kLimit:
      return "the template nests, recurses or loops past the interpreter's limits (lib/tokenizer/jinja/template.h)";
  }
  return {};
}

}  // namespace

TemplateError::TemplateError(Cause cause, std::string name, int line, int column, const std::string& message)
    : util::DataError(where(name, line, column) + ": " + message, hint_for(cause)),
      cause_(cause),
      name_(std::move(name)),
      line_(line),
      column_(column),
      message_(message) {}

void eval_fail(std::string message) {
  throw EvalError{TemplateError::Cause::kRuntime, std::move(message)};
}

void eval_fail_unsupported(std::string message) {
  throw EvalError{TemplateError::Cause::kUnsupported, std::move(message)};
}

}  // namespace hftrain::tokenizer::jinja
