// The globals transformers gives chat templates: range (capped at 100000 items, as jinja2's sandbox
// caps it), dict, namespace, raise_exception(message) and strftime_now(format) (local time).
#include <algorithm>
#include <ctime>
#include <memory>

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
  // The length in unsigned arithmetic: stop - start and -step overflow int64 at the extremes.
  const auto ustart = static_cast<uint64_t>(start), ustop = static_cast<uint64_t>(stop);
  const auto ustep = static_cast<uint64_t>(step);
  uint64_t n = 0;
  if (step > 0 && start < stop) n = (ustop - ustart - 1) / ustep + 1;
  if (step < 0 && start > stop) n = (ustart - ustop - 1) / (0 - ustep) + 1;
  if (n > static_cast<uint64_t>(kMaxRange))
    eval_fail("Range too big. The sandbox blocks ranges larger than MAX_RANGE (" + std::to_string(kMaxRange) + ").");
  std::vector<Value> out;
  out.reserve(static_cast<size_t>(n));
  // start + i * step lies between start and stop; computed modulo 2^64, it converts back exactly.
  for (uint64_t i = 0; i < n; ++i) out.push_back(Value::from_int(static_cast<int64_t>(ustart + i * ustep)));
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
  // strftime returns 0 both for a result that does not fit and for an empty one: a trailing byte
  // makes the result never empty. The buffer doubles until the result fits, up to kMaxBuiltSize
  // (a field width, `%1000000000Y`, makes a short format long).
  if (format->find('\0') != std::string::npos) eval_fail("embedded null character");
  const std::string marked = *format + "|";
  check_built_size(marked.size());
  constexpr size_t kMaxBuffer = kMaxBuiltSize + 2;  // the result, the marker and the terminating NUL
  for (size_t size = std::min(marked.size() * 2 + 64, kMaxBuffer);; size = std::min(size * 2, kMaxBuffer)) {
    const std::unique_ptr<char[]> buf(new char[size]);
    const size_t n = std::strftime(buf.get(), size, marked.c_str(), &local);
    if (n > 0) return Value::from_string(std::string(buf.get(), n - 1));
    if (size >= kMaxBuffer)
      eval_fail_unsupported("strftime_now() result longer than " + std::to_string(kMaxBuiltSize) + " bytes");
  }
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
