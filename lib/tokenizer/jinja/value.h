// The dynamic value of the Jinja interpreter, modelled on the Python objects jinja2 handles:
// undefined (jinja2's default Undefined, with the message an operation on it raises), None, bool,
// int (64-bit), float, str (UTF-8), list/tuple (and dict views, which print differently), dict
// (insertion-ordered, Python key equality: 1 == 1.0 == True), generator (what select, map, ...
// return: single pass, always true, no len()), callables (macros, builtins, bound methods) and
// objects with attributes (namespace(), the loop variable).
//
// Strings, lists and dicts are immutable and shared; namespaces and generators are shared and
// mutable, as in Python.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace hftrain::tokenizer::jinja {

class Value;
class Interpreter;
struct Sequence;
class Dict;
struct IteratorState;
class Callable;
class Object;

enum class SeqKind : uint8_t { kList, kTuple, kDictKeys, kDictValues, kDictItems };

// Values nest at most this deep (lists, dicts, tuples, generators, and the callables and objects
// that hold values: bound methods, loop variables), so that printing, comparing and freeing them
// cannot overflow the stack.
inline constexpr uint32_t kMaxValueDepth = 512;

class Value {
 public:
  enum class Kind : uint8_t {
    kUndefined,
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kSeq,
    kDict,
    kIterator,
    kCallable,
    kObject
  };
  struct Undefined {
    std::shared_ptr<const std::string> message;  // what using it raises
  };

  Value() : data_(Undefined{}) {}  // undefined with a generic message
  static Value undefined(std::string message);
  static Value none() { return Value(Data(std::in_place_index<1>, nullptr)); }
  static Value from_bool(bool b) { return Value(Data(std::in_place_index<2>, b)); }
  static Value from_int(int64_t i) { return Value(Data(std::in_place_index<3>, i)); }
  static Value from_float(double d) { return Value(Data(std::in_place_index<4>, d)); }
  static Value from_string(std::string s) {
    return Value(Data(std::in_place_index<5>, std::make_shared<const std::string>(std::move(s))));
  }
  static Value from_seq(std::vector<Value> items, SeqKind kind = SeqKind::kList);
  static Value from_dict(Dict d);
  static Value from_iterator(std::vector<Value> items, std::string type_name = "generator");
  static Value from_callable(std::shared_ptr<const Callable> c) {
    return Value(Data(std::in_place_index<9>, std::move(c)));
  }
  static Value from_object(std::shared_ptr<Object> o) { return Value(Data(std::in_place_index<10>, std::move(o))); }

  Kind kind() const { return static_cast<Kind>(data_.index()); }
  bool is_undefined() const { return kind() == Kind::kUndefined; }
  bool is_none() const { return kind() == Kind::kNone; }
  bool is_bool() const { return kind() == Kind::kBool; }
  bool is_int() const { return kind() == Kind::kInt; }
  bool is_float() const { return kind() == Kind::kFloat; }
  bool is_integral() const { return is_int() || is_bool(); }  // Python int, bool included
  bool is_number() const { return is_integral() || is_float(); }
  bool is_string() const { return kind() == Kind::kString; }
  bool is_seq() const { return kind() == Kind::kSeq; }
  bool is_list() const;
  bool is_tuple() const;
  bool is_dict() const { return kind() == Kind::kDict; }
  bool is_iterator() const { return kind() == Kind::kIterator; }
  bool is_callable() const { return kind() == Kind::kCallable; }
  bool is_object() const { return kind() == Kind::kObject; }

  bool get_bool() const { return std::get<bool>(data_); }
  int64_t get_int() const { return is_bool() ? (get_bool() ? 1 : 0) : std::get<int64_t>(data_); }  // integral only
  double get_float() const;                                                                        // any number
  const std::string& str() const { return *std::get<std::shared_ptr<const std::string>>(data_); }
  const Sequence& seq() const { return *std::get<std::shared_ptr<const Sequence>>(data_); }
  const Dict& dict() const { return *std::get<std::shared_ptr<const Dict>>(data_); }
  IteratorState& iterator() const { return *std::get<std::shared_ptr<IteratorState>>(data_); }
  const Callable& callable() const { return *std::get<std::shared_ptr<const Callable>>(data_); }
  Object& object() const { return *std::get<std::shared_ptr<Object>>(data_); }
  const void* identity() const;  // the shared object, for `is sameas`; null for scalars
  const std::string& undefined_message() const;

  // Python's type(x).__name__ ("NoneType", "int", "str", "list", "dict", "generator", ...).
  std::string type_name() const;

 private:
  using Data = std::variant<Undefined, std::nullptr_t, bool, int64_t, double, std::shared_ptr<const std::string>,
                            std::shared_ptr<const Sequence>, std::shared_ptr<const Dict>,
                            std::shared_ptr<IteratorState>, std::shared_ptr<const Callable>, std::shared_ptr<Object>>;
  explicit Value(Data d) : data_(std::move(d)) {}
  Data data_;
};

struct Sequence {
  std::vector<Value> items;
  SeqKind kind = SeqKind::kList;
  uint32_t depth = 1;
};

// A Python dict: entries in insertion order, looked up by a canonical hash key.
class Dict {
 public:
  const Value* find(const Value& key) const;  // throws EvalError for an unhashable key
  const Value* find(std::string_view key) const;
  void set(const Value& key, Value value);  // keeps the position of an existing key
  const std::vector<std::pair<Value, Value>>& entries() const { return entries_; }
  size_t size() const { return entries_.size(); }
  uint32_t depth() const { return depth_; }

 private:
  std::vector<std::pair<Value, Value>> entries_;
  std::unordered_map<std::string, size_t> index_;
  uint32_t depth_ = 1;
};

// A Python generator or iterator: the items it will still produce.
struct IteratorState {
  std::vector<Value> items;
  size_t pos = 0;
  std::string type_name = "generator";
  uint32_t depth = 1;
};

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

class Callable {
 public:
  virtual ~Callable() = default;
  virtual Value call(Interpreter& interp, CallArgs& args) const = 0;
  virtual std::string repr() const = 0;
  virtual std::string type_name() const { return "function"; }
  // How deep the values it holds nest (see value_depth): a bound method as deep as its `self`; 0
  // for one that holds no values, or only through what the interpreter frees itself (a macro's
  // scope).
  virtual uint32_t depth() const { return 0; }
};

class Object {
 public:
  virtual ~Object() = default;
  // The attribute `name`, or nullopt when the object has none.
  virtual std::optional<Value> attribute(std::string_view name) const = 0;
  virtual std::string repr() const = 0;
  virtual std::string type_name() const = 0;
  virtual bool is_namespace() const { return false; }
  // How deep the values it holds nest (see value_depth), fixed when it is built: a list that holds
  // the object is one deeper. A namespace is 0: it is mutable (it can even hold itself), so the
  // interpreter keeps every namespace until the render ends and then clears them one by one, and
  // printing stops at a namespace already being printed, as Python does.
  virtual uint32_t depth() const { return 0; }
};

inline bool Value::is_list() const {
  return is_seq() && seq().kind == SeqKind::kList;
}
inline bool Value::is_tuple() const {
  return is_seq() && seq().kind == SeqKind::kTuple;
}

// How deep `v` nests: 0 for scalars, a list, dict, tuple or generator one deeper than its deepest
// item, a callable or object its depth().
uint32_t value_depth(const Value& v);
// One deeper than the deepest of `items` (1 when there are none); throws EvalError past
// kMaxValueDepth.
uint32_t items_depth(const std::vector<Value>& items);
// Python truthiness (undefined is false, a generator always true).
bool truthy(const Value& v);
// Python ==.
bool equals(const Value& a, const Value& b);
// The canonical dict/set key of a hashable value; throws EvalError("unhashable type") otherwise.
std::string hash_key(const Value& v);

// A namespace() object: attributes set by {% set ns.attr = value %}.
class Namespace final : public Object {
 public:
  std::optional<Value> attribute(std::string_view name) const override;
  std::string repr() const override;
  std::string type_name() const override { return "Namespace"; }
  bool is_namespace() const override { return true; }
  void set(const std::string& name, Value value);
  void clear() { attrs_ = Dict(); }  // breaks reference cycles after a render
  const Dict& attributes() const { return attrs_; }

 private:
  Dict attrs_;
};

}  // namespace hftrain::tokenizer::jinja
