// The globals transformers gives chat templates: range (capped at 100000 items, as jinja2's sandbox
// caps it), dict, namespace, raise_exception(message) and strftime_now(format) (local time).
#include <ctime>

#include "tokenizer/jinja/args.h"
#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/error.h"
#include "tokenizer/jinja/interpreter.h"
#include "tokenizer/jinja/operators.h"
#include "tokenizer/jinja/py_format.h"

namespace hftrain::tokenizer::jinja {
namespace {

constexpr int64_t kMaxRange = 100000;

using GlobalFn = Value (*)(Interpreter& interp, CallArgs& args);

class GlobalFunction final : public Callable {
 public:
  GlobalFunction(std::string name, GlobalFn fn) : name_(std::move(name)), fn_(fn) {}
  Value call(Interpreter& interp, CallArgs& args) const override { return fn_(interp, args); }
  std::string repr() const override { return "<function " + name_ + ">"; }

 private:
  std::string name_;
  GlobalFn fn_;
};

Value g_range(Interpreter&, CallArgs& args) {
  if (!args.keyword.empty()) eval_fail("range() takes no keyword arguments");
  const auto& p = args.positional;
  if (p.empty() || p.size() > 3) eval_fail("range expected at most 3 arguments, got " + std::to_string(p.size()));
  for (const auto& v : p) {
    require_defined(v);
    if (!v.is_integral()) eval_fail("'" + v.type_name() + "' object cannot be interpreted as an integer");
  }
  const int64_t start = p.size() == 1 ? 0 : p[0].get_int();
  const int64_t stop = p.size() == 1 ? p[0].get_int() : p[1].get_int();
  const int64_t step = p.size() == 3 ? p[2].get_int() : 1;
  if (step == 0) eval_fail("range() arg 3 must not be zero");
  int64_t n = 0;
  if (step > 0 && start < stop) n = (stop - start - 1) / step + 1;
  if (step < 0 && start > stop) n = (start - stop - 1) / -step + 1;
  if (n > kMaxRange)
    eval_fail("Range too big. The sandbox blocks ranges larger than MAX_RANGE (" + std::to_string(kMaxRange) + ").");
  std::vector<Value> out;
  out.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out.push_back(Value::from_int(start + i * step));
  return Value::from_seq(std::move(out));
}

// dict(*args, **kwargs) as Python builds it.
Dict build_dict(const CallArgs& args, const char* what) {
  if (args.positional.size() > 1)
    eval_fail(std::string(what) + " expected at most 1 argument, got " + std::to_string(args.positional.size()));
  Dict d;
  if (!args.positional.empty()) {
    const Value& src = args.positional[0];
    if (src.is_dict()) {
      d = src.dict();
    } else if (src.is_object() && src.object().is_namespace()) {
      eval_fail(std::string(what) + "(): a namespace is not a mapping");
    } else {
      size_t i = 0;
      for (const auto& pair : iterate(src)) {
        const std::vector<Value> kv =
            pair.is_string() || pair.is_seq() || pair.is_iterator() ? iterate(pair) : std::vector<Value>{};
        if (kv.size() != 2)
          eval_fail("dictionary update sequence element #" + std::to_string(i) + " has length " +
                    std::to_string(kv.size()) + "; 2 is required");
        d.set(kv[0], kv[1]);
        ++i;
      }
    }
  }
  for (const auto& [key, value] : args.keyword) d.set(Value::from_string(key), value);
  return d;
}

Value g_dict(Interpreter&, CallArgs& args) {
  return Value::from_dict(build_dict(args, "dict"));
}

Value g_namespace(Interpreter& interp, CallArgs& args) {
  const Dict attrs = build_dict(args, "namespace");
  auto ns = std::make_shared<Namespace>();
  for (const auto& [k, v] : attrs.entries()) {
    if (!k.is_string()) eval_fail("namespace attribute names must be strings");
    ns->set(k.str(), v);
  }
  interp.track_namespace(ns);
  return Value::from_object(ns);
}

Value g_raise_exception(Interpreter&, CallArgs& args) {
  BoundArgs a("raise_exception", args, {"message"});
  throw EvalError{TemplateError::Cause::kRaised, to_str(a.get(0))};
}

Value g_strftime_now(Interpreter&, CallArgs& args) {
  BoundArgs a("strftime_now", args, {"format"});
  const std::string* format = a.str_or_null(0);
  if (!format) eval_fail("strftime() argument 1 must be str");
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  std::string buf(format->size() * 8 + 64, '\0');
  const size_t n = std::strftime(buf.data(), buf.size(), format->c_str(), &local);
  buf.resize(n);
  return Value::from_string(std::move(buf));
}

class UnsupportedGlobal final : public Callable {
 public:
  explicit UnsupportedGlobal(std::string name) : name_(std::move(name)) {}
  Value call(Interpreter&, CallArgs&) const override { eval_fail_unsupported("unsupported global `" + name_ + "`"); }
  std::string repr() const override { return "<function " + name_ + ">"; }

 private:
  std::string name_;
};

}  // namespace

const std::unordered_map<std::string, Value>& builtin_globals() {
  static const auto globals = [] {
    std::unordered_map<std::string, Value> g;
    auto add = [&](const std::string& name, GlobalFn fn) {
      g.emplace(name, Value::from_callable(std::make_shared<GlobalFunction>(name, fn)));
    };
    add("range", g_range);
    add("dict", g_dict);
    add("namespace", g_namespace);
    add("raise_exception", g_raise_exception);
    add("strftime_now", g_strftime_now);
    for (const char* name : {"lipsum", "cycler", "joiner"})
      g.emplace(name, Value::from_callable(std::make_shared<UnsupportedGlobal>(name)));
    return g;
  }();
  return globals;
}

}  // namespace hftrain::tokenizer::jinja
