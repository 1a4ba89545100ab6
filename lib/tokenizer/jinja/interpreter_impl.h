// The interpreter's internals shared by interpreter.cpp (statements) and evaluate.cpp (expressions):
// scopes, the loop variable, macro values.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/jinja/error.h"
#include "tokenizer/jinja/interpreter.h"

namespace hftrain::tokenizer::jinja {

struct Interpreter::Scope {
  std::shared_ptr<Scope> parent;
  std::vector<std::pair<std::string, Value>> vars;

  const Value* find(const std::string& name) const {
    for (const Scope* s = this; s; s = s->parent.get())
      for (const auto& [n, v] : s->vars)
        if (n == name) return &v;
    return nullptr;
  }
  void set(const std::string& name, Value v) {
    for (auto& [n, old] : vars)
      if (n == name) {
        old = std::move(v);
        return;
      }
    vars.emplace_back(name, std::move(v));
  }
  static std::shared_ptr<Scope> child(const std::shared_ptr<Scope>& parent) {
    auto s = std::make_shared<Scope>();
    s->parent = parent;
    return s;
  }
};

// A macro (or a call block's caller) bound to the scope it was defined in.
class MacroValue final : public Callable {
 public:
  MacroValue(std::shared_ptr<const MacroDef> def, std::shared_ptr<Interpreter::Scope> closure)
      : def_(std::move(def)), closure_(std::move(closure)) {}
  Value call(Interpreter& interp, CallArgs& args) const override { return interp.invoke_macro(*def_, closure_, args); }
  std::string repr() const override { return "<Macro '" + def_->name + "'>"; }
  std::string type_name() const override { return "Macro"; }

 private:
  std::shared_ptr<const MacroDef> def_;
  std::shared_ptr<Interpreter::Scope> closure_;
};

// loop.changed() remembers values nesting at most this deep (more when the loop's items nest deeper).
inline constexpr uint32_t kLoopChangedDepth = 32;

// State shared by the loop objects of one {% for %}: its items and what loop.changed() last saw.
// `depth` is fixed before the first loop object exists (a list holding a loop object counts it):
// one deeper than the items, and at least kLoopChangedDepth so that loop.changed() has room; a
// loop.changed() argument nesting deeper is refused, so that a chain of loop states through
// loop.changed() cannot grow past kMaxValueDepth behind the depths already counted.
struct LoopState {
  std::vector<Value> items;
  std::optional<Value> last_changed;
  uint32_t depth = kLoopChangedDepth;
};

// The `loop` variable of one iteration.
class LoopObject final : public Object {
 public:
  LoopObject(std::shared_ptr<LoopState> state, size_t index0) : state_(std::move(state)), index0_(index0) {}
  std::optional<Value> attribute(std::string_view name) const override;
  std::string repr() const override;
  std::string type_name() const override { return "LoopContext"; }
  uint32_t depth() const override { return state_->depth; }
  Value cycle(const CallArgs& args) const;
  Value changed(const CallArgs& args) const;

 private:
  std::shared_ptr<LoopState> state_;
  size_t index0_;
};

// Nesting guard for statements and expressions.
class Interpreter::DepthGuard {
 public:
  explicit DepthGuard(Interpreter& in) : in_(in) {
    if (++in_.depth_ > kMaxRenderDepth) {
      --in_.depth_;
      throw EvalError{TemplateError::Cause::kLimit, "rendering nests deeper than " + std::to_string(kMaxRenderDepth) +
                                                        " levels (runaway macro recursion?)"};
    }
  }
  ~DepthGuard() { --in_.depth_; }
  DepthGuard(const DepthGuard&) = delete;
  DepthGuard& operator=(const DepthGuard&) = delete;

 private:
  Interpreter& in_;
};

// Redirects the output into a buffer for its lifetime.
class Interpreter::Capture {
 public:
  explicit Capture(Interpreter& in) : in_(in), saved_(in.out_) { in_.out_ = &buffer_; }
  ~Capture() { in_.out_ = saved_; }
  Capture(const Capture&) = delete;
  Capture& operator=(const Capture&) = delete;
  std::string take() { return std::move(buffer_); }

 private:
  Interpreter& in_;
  std::string* saved_;
  std::string buffer_;
};

}  // namespace hftrain::tokenizer::jinja
