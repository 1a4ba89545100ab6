// The interpreter's statements, macros and the loop variable (see interpreter.h); expressions are in
// evaluate.cpp.
#include "tokenizer/jinja/interpreter.h"

#include <algorithm>
#include <new>

#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/error.h"
#include "tokenizer/jinja/interpreter_impl.h"
#include "tokenizer/jinja/json_bridge.h"
#include "tokenizer/jinja/operators.h"
#include "tokenizer/jinja/py_format.h"
#include "tokenizer/jinja/text.h"

namespace hftrain::tokenizer::jinja {
namespace {

class LoopMethod final : public Callable {
 public:
  LoopMethod(LoopObject loop, bool cycle) : loop_(std::move(loop)), cycle_(cycle) {}
  Value call(Interpreter&, CallArgs& args) const override { return cycle_ ? loop_.cycle(args) : loop_.changed(args); }
  std::string repr() const override {
    return cycle_ ? "<bound method LoopContext.cycle>" : "<bound method LoopContext.changed>";
  }
  std::string type_name() const override { return "method"; }
  uint32_t depth() const override { return loop_.depth(); }

 private:
  LoopObject loop_;
  bool cycle_;
};

}  // namespace

std::optional<Value> LoopObject::attribute(std::string_view name) const {
  const size_t n = state_->items.size();
  const auto i = static_cast<int64_t>(index0_);
  const auto len = static_cast<int64_t>(n);
  if (name == "index") return Value::from_int(i + 1);
  if (name == "index0") return Value::from_int(i);
  if (name == "revindex") return Value::from_int(len - i);
  if (name == "revindex0") return Value::from_int(len - i - 1);
  if (name == "first") return Value::from_bool(index0_ == 0);
  if (name == "last") return Value::from_bool(index0_ + 1 == n);
  if (name == "length") return Value::from_int(len);
  if (name == "depth") return Value::from_int(1);
  if (name == "depth0") return Value::from_int(0);
  if (name == "previtem")
    return index0_ == 0 ? Value::undefined("there is no previous item") : state_->items[index0_ - 1];
  if (name == "nextitem")
    return index0_ + 1 >= n ? Value::undefined("there is no next item") : state_->items[index0_ + 1];
  if (name == "cycle" || name == "changed")
    return Value::from_callable(std::make_shared<LoopMethod>(*this, name == "cycle"));
  return std::nullopt;
}

std::string LoopObject::repr() const {
  return "<LoopContext " + std::to_string(index0_ + 1) + "/" + std::to_string(state_->items.size()) + ">";
}

Value LoopObject::cycle(const CallArgs& args) const {
  if (!args.keyword.empty()) eval_fail("cycle() takes no keyword arguments");
  if (args.positional.empty()) eval_fail("no items for cycling given");
  return args.positional[index0_ % args.positional.size()];
}

Value LoopObject::changed(const CallArgs& args) const {
  Value now = Value::from_seq(args.positional, SeqKind::kTuple);
  if (value_depth(now) > state_->depth)
    eval_fail_unsupported("loop.changed() remembers values nesting at most " + std::to_string(state_->depth - 1) +
                          " levels deep (lists, dicts, loop variables, ...)");
  if (state_->last_changed && equals(*state_->last_changed, now)) return Value::from_bool(false);
  state_->last_changed = std::move(now);
  return Value::from_bool(true);
}

Interpreter::Interpreter(const TemplateAst& ast) : ast_(ast) {}

Interpreter::~Interpreter() {
  // Macros hold the scope they were defined in, and that scope holds them: clear those scopes (and
  // namespaces, which can hold themselves) so the cycles are freed.
  for (auto& s : closures_) s->vars.clear();
  for (auto& ns : namespaces_) ns->clear();
}

void Interpreter::step(uint64_t n) {
  steps_ += std::min<uint64_t>(n, kMaxRenderSteps + 1);
  if (steps_ > kMaxRenderSteps)
    throw EvalError{TemplateError::Cause::kLimit,
                    "rendering ran more than " + std::to_string(kMaxRenderSteps) + " statements and loop iterations"};
}

void Interpreter::write(const std::string& s) {
  if (out_->size() + s.size() > kMaxOutputBytes)
    throw EvalError{TemplateError::Cause::kLimit,
                    "rendered text exceeds " + std::to_string(kMaxOutputBytes) + " bytes"};
  *out_ += s;
}

RenderOutput Interpreter::render(const nlohmann::ordered_json& context) {
  try {
    if (!context.is_object()) eval_fail("the render context must be a JSON object");
    const Value ctx = from_json(context);
    context_ = &ctx.dict();
    auto root = std::make_shared<Scope>();
    exec_body(ast_.body, root);
    context_ = nullptr;
  } catch (const EvalError& e) {
    context_ = nullptr;
    throw TemplateError(e.cause, ast_.name, line_, 0, e.message);
  } catch (const std::bad_alloc&) {
    context_ = nullptr;
    throw TemplateError(TemplateError::Cause::kLimit, ast_.name, line_, 0, "out of memory while rendering");
  }
  RenderOutput out;
  for (const auto& [start, cps] : spans_) {
    const size_t begin = std::min(start, result_.size());
    const size_t end = begin + text::byte_offset(std::string_view(result_).substr(begin), cps);
    out.generation_spans.emplace_back(begin, end);
  }
  out.text = std::move(result_);
  return out;
}

Value Interpreter::lookup(const std::string& name, const Scope& scope) const {
  if (const Value* v = scope.find(name)) return *v;
  if (context_)
    if (const Value* v = context_->find(std::string_view(name))) return *v;
  const auto& globals = builtin_globals();
  if (auto it = globals.find(name); it != globals.end()) return it->second;
  return Value::undefined("'" + name + "' is undefined");
}

Interpreter::Flow Interpreter::exec_body(const Body& body, const std::shared_ptr<Scope>& scope) {
  for (const auto& s : body) {
    const Flow f = exec(*s, scope);
    if (f != Flow::kNormal) return f;
  }
  return Flow::kNormal;
}

std::string Interpreter::capture_body(const Body& body, const std::shared_ptr<Scope>& scope) {
  Capture capture(*this);
  exec_body(body, scope);
  return capture.take();
}

Interpreter::Flow Interpreter::exec(const Stmt& s, const std::shared_ptr<Scope>& scope) {
  DepthGuard guard(*this);
  step();
  line_ = s.line;
  switch (s.kind) {
    case StmtKind::kData:
      write(s.text);
      return Flow::kNormal;
    case StmtKind::kPrint: {
      const Value v = eval(*s.expr, scope);
      write(to_str(v));
      return Flow::kNormal;
    }
    case StmtKind::kIf:
      for (const auto& [test, body] : s.branches) {
        const Value t = eval(*test, scope);
        if (truthy(t)) return exec_body(body, scope);
      }
      return exec_body(s.else_body, scope);
    case StmtKind::kFor:
      exec_for(s, scope);
      return Flow::kNormal;
    case StmtKind::kSet:
      assign(s.target, eval(*s.expr, scope), *scope);
      return Flow::kNormal;
    case StmtKind::kSetBlock: {
      Value v = Value::from_string(capture_body(s.body, Scope::child(scope)));
      if (s.expr) v = eval_filter_chain(*s.expr, scope, v);
      line_ = s.line;
      assign(s.target, v, *scope);
      return Flow::kNormal;
    }
    case StmtKind::kFilterBlock: {
      const Value body = Value::from_string(capture_body(s.body, Scope::child(scope)));
      write(to_str(eval_filter_chain(*s.expr, scope, body)));
      return Flow::kNormal;
    }
    case StmtKind::kMacro:
      scope->set(s.macro->name, make_macro(s.macro, scope));
      return Flow::kNormal;
    case StmtKind::kCallBlock: {
      const Value caller = make_macro(s.macro, scope);
      write(to_str(eval_call(*s.expr, scope, &caller)));
      return Flow::kNormal;
    }
    case StmtKind::kGeneration:
      exec_generation(s, scope);
      return Flow::kNormal;
    case StmtKind::kWith: {
      auto inner = Scope::child(scope);
      std::vector<Value> values;
      for (const auto& a : s.assignments) values.push_back(eval(*a.second, scope));
      for (size_t i = 0; i < values.size(); ++i) assign(s.assignments[i].first, values[i], *inner);
      return exec_body(s.body, inner);
    }
    case StmtKind::kBreak:
      return Flow::kBreak;
    case StmtKind::kContinue:
      return Flow::kContinue;
  }
  return Flow::kNormal;
}

void Interpreter::exec_for(const Stmt& s, const std::shared_ptr<Scope>& scope) {
  const Value iterable = eval(*s.expr, scope);
  line_ = s.line;
  auto state = std::make_shared<LoopState>();
  state->items = iterate(iterable);
  if (s.cond) {
    std::vector<Value> kept;
    for (const auto& item : state->items) {
      step();
      auto probe = Scope::child(scope);
      assign(s.target, item, *probe);
      if (truthy(eval(*s.cond, probe))) kept.push_back(item);
    }
    state->items = std::move(kept);
  }
  state->depth = std::max(items_depth(state->items), kLoopChangedDepth);
  if (state->items.empty()) {
    exec_body(s.else_body, Scope::child(scope));
    return;
  }
  for (size_t i = 0; i < state->items.size(); ++i) {
    step();
    auto inner = Scope::child(scope);
    line_ = s.line;
    assign(s.target, state->items[i], *inner);
    inner->set("loop", Value::from_object(std::make_shared<LoopObject>(state, i)));
    if (exec_body(s.body, inner) == Flow::kBreak) break;
  }
}

void Interpreter::exec_generation(const Stmt& s, const std::shared_ptr<Scope>& scope) {
  // transformers' AssistantTracker: the span starts at the length of the text yielded at the top level
  // so far and runs for the length of the block's output (in characters).
  const std::string body = capture_body(s.body, Scope::child(scope));
  spans_.emplace_back(result_.size(), text::length(body));
  write(body);
}

void Interpreter::assign(const Target& t, const Value& v, Scope& scope) {
  switch (t.kind) {
    case Target::Kind::kName:
      scope.set(t.name, v);
      return;
    case Target::Kind::kNamespaceAttr: {
      const Value ns = lookup(t.name, scope);
      if (!ns.is_object() || !ns.object().is_namespace()) eval_fail("cannot assign attribute on non-namespace object");
      static_cast<Namespace&>(ns.object()).set(t.attr, v);
      return;
    }
    case Target::Kind::kTuple: {
      const std::vector<Value> items = iterate(v);
      if (items.size() > t.items.size())
        eval_fail("too many values to unpack (expected " + std::to_string(t.items.size()) + ")");
      if (items.size() < t.items.size())
        eval_fail("not enough values to unpack (expected " + std::to_string(t.items.size()) + ", got " +
                  std::to_string(items.size()) + ")");
      for (size_t i = 0; i < items.size(); ++i) assign(t.items[i], items[i], scope);
      return;
    }
  }
}

Value Interpreter::make_macro(const std::shared_ptr<const MacroDef>& def, const std::shared_ptr<Scope>& scope) {
  closures_.push_back(scope);
  return Value::from_callable(std::make_shared<MacroValue>(def, scope));
}

Value Interpreter::invoke_macro(const MacroDef& def, const std::shared_ptr<Scope>& closure, CallArgs& args) {
  DepthGuard guard(*this);
  step();
  auto scope = Scope::child(closure);
  const size_t n = def.params.size();
  std::vector<std::optional<Value>> bound(n);
  std::vector<Value> varargs;
  for (size_t i = 0; i < args.positional.size(); ++i) {
    if (i < n) {
      bound[i] = args.positional[i];
    } else if (def.uses_varargs) {
      varargs.push_back(args.positional[i]);
    } else {
      eval_fail("macro '" + def.name + "' takes not more than " + std::to_string(n) + " argument(s)");
    }
  }
  Dict kwargs;
  std::optional<Value> caller;
  for (const auto& [key, value] : args.keyword) {
    size_t i = 0;
    while (i < n && def.params[i] != key) ++i;
    if (i < n) {
      if (bound[i]) eval_fail("macro '" + def.name + "' got multiple values for argument '" + key + "'");
      bound[i] = value;
    } else if (key == "caller" && def.uses_caller) {
      caller = value;
    } else if (def.uses_kwargs) {
      kwargs.set(Value::from_string(key), value);
    } else {
      eval_fail("macro '" + def.name + "' takes no keyword argument '" + key + "'");
    }
  }
  const size_t first_default = n - def.defaults.size();
  for (size_t i = 0; i < n; ++i) {
    if (bound[i]) {
      scope->set(def.params[i], *bound[i]);
    } else if (i >= first_default) {
      scope->set(def.params[i], eval(*def.defaults[i - first_default], scope));
    } else {
      scope->set(def.params[i], Value::undefined("parameter '" + def.params[i] + "' was not provided"));
    }
  }
  if (def.uses_varargs) scope->set("varargs", Value::from_seq(std::move(varargs), SeqKind::kTuple));
  if (def.uses_kwargs) scope->set("kwargs", Value::from_dict(std::move(kwargs)));
  if (def.uses_caller) scope->set("caller", caller ? *caller : Value::undefined("No caller defined"));
  return Value::from_string(capture_body(def.body, scope));
}

}  // namespace hftrain::tokenizer::jinja
