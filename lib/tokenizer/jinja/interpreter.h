// Renders a TemplateAst: statements write to the output (or to a capture buffer inside macros, block
// sets, filter blocks and {% generation %}), expressions evaluate to Values. Scoping follows jinja2:
// {% if %} shares its scope, each {% for %} iteration, macro call, {% with %}, block set, filter block
// and generation block gets a child scope (so {% set %} inside them does not leak), and macros see
// the scope they were defined in, live. Names resolve in the scopes, then the context, then the
// globals (range, dict, namespace, raise_exception, strftime_now).
//
// Limits: expression/statement evaluation nests at most kMaxRenderDepth levels (macro recursion
// included), a render runs at most kMaxRenderSteps statements and loop iterations, and writes at
// most kMaxOutputBytes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokenizer/jinja/ast.h"
#include "tokenizer/jinja/value.h"

namespace hftrain::tokenizer::jinja {

inline constexpr int kMaxRenderDepth = 1024;
// A chat template renders one conversation in thousands of steps; a million bounds a hostile one
// to a fraction of a second (and to about two under the fuzzers' sanitizers, whose 10 s timeout
// 10 million steps overran).
inline constexpr uint64_t kMaxRenderSteps = 1'000'000;
inline constexpr size_t kMaxOutputBytes = size_t{256} << 20;

struct RenderOutput {
  std::string text;
  std::vector<std::pair<size_t, size_t>> generation_spans;  // byte ranges of `text`
};

class Interpreter {
 public:
  explicit Interpreter(const TemplateAst& ast);
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  // Renders once; an Interpreter renders one context.
  RenderOutput render(const nlohmann::ordered_json& context);

  // For builtins: call a callable value, apply a filter or a test by name.
  Value call(const Value& callee, CallArgs& args);
  Value filter(const std::string& name, const Value& input, CallArgs& args);
  bool test(const std::string& name, const Value& input, CallArgs& args);
  // Counts `n` units of work against kMaxRenderSteps.
  void step(uint64_t n = 1);
  // Registers a namespace so that reference cycles through it are broken after the render.
  void track_namespace(const std::shared_ptr<Namespace>& ns) { namespaces_.push_back(ns); }

  struct Scope;
  struct MacroInvocation;

 private:
  enum class Flow { kNormal, kBreak, kContinue };
  class DepthGuard;
  class Capture;

  Flow exec_body(const Body& body, const std::shared_ptr<Scope>& scope);
  Flow exec(const Stmt& s, const std::shared_ptr<Scope>& scope);
  void exec_for(const Stmt& s, const std::shared_ptr<Scope>& scope);
  void exec_generation(const Stmt& s, const std::shared_ptr<Scope>& scope);
  std::string capture_body(const Body& body, const std::shared_ptr<Scope>& scope);
  void assign(const Target& t, const Value& v, Scope& scope);
  void write(const std::string& s);

  Value eval(const Expr& e, const std::shared_ptr<Scope>& scope);
  Value eval_call(const Expr& e, const std::shared_ptr<Scope>& scope, const Value* caller);
  Value eval_filter_chain(const Expr& e, const std::shared_ptr<Scope>& scope, const Value& input);
  void eval_args(const Expr& e, size_t first, const std::shared_ptr<Scope>& scope, CallArgs& out);
  Value lookup(const std::string& name, const Scope& scope) const;
  Value make_macro(const std::shared_ptr<const MacroDef>& def, const std::shared_ptr<Scope>& scope);

 public:
  // Called by macro values.
  Value invoke_macro(const MacroDef& def, const std::shared_ptr<Scope>& closure, CallArgs& args);

 private:
  const TemplateAst& ast_;
  const Dict* context_ = nullptr;
  std::string result_;
  std::string* out_ = &result_;
  std::vector<std::pair<size_t, size_t>> spans_;  // (start byte, length in code points)
  int depth_ = 0;
  uint64_t steps_ = 0;
  int line_ = 0;
  std::vector<std::shared_ptr<Scope>> closures_;
  std::vector<std::shared_ptr<Namespace>> namespaces_;
};

}  // namespace hftrain::tokenizer::jinja
