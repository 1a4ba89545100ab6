// The errors of the Jinja interpreter. TemplateError is what callers see: a syntax error, a construct
// outside the supported subset, raise_exception() called by the template, or a runtime type error;
// it names the template, the line (and column when known). EvalError is internal: builtins throw it
// without knowing the line, and the interpreter turns it into a TemplateError at the node it ran.
#pragma once

#include <string>

#include "util/error.h"

namespace hftrain::tokenizer::jinja {

class TemplateError : public util::DataError {
 public:
  enum class Cause { kSyntax, kUnsupported, kRaised, kRuntime, kLimit };

  TemplateError(Cause cause, std::string name, int line, int column, const std::string& message);

  Cause cause() const { return cause_; }
  const std::string& name() const { return name_; }
  int line() const { return line_; }      // 1-based; 0 when unknown
  int column() const { return column_; }  // 1-based byte column; 0 when unknown
  // The message alone, without the template name and line (for raise_exception: its argument).
  const std::string& message() const { return message_; }

 private:
  Cause cause_;
  std::string name_;
  int line_;
  int column_;
  std::string message_;
};

// Thrown by builtins and value operations; carries no position.
struct EvalError {
  TemplateError::Cause cause = TemplateError::Cause::kRuntime;
  std::string message;
};

[[noreturn]] void eval_fail(std::string message);
[[noreturn]] void eval_fail_unsupported(std::string message);

}  // namespace hftrain::tokenizer::jinja
