// The dynamic value: construction, Python truthiness, equality and dict keys, namespace objects.
#include "tokenizer/jinja/value.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "tokenizer/jinja/error.h"
#include "tokenizer/jinja/py_format.h"

namespace hftrain::tokenizer::jinja {
namespace {

const std::string& generic_undefined_message() {
  static const std::string message = "value is undefined";
  return message;
}

bool seq_family_equal(SeqKind a, SeqKind b) {
  const bool a_list = a == SeqKind::kList, b_list = b == SeqKind::kList;
  const bool a_tuple = a == SeqKind::kTuple || a == SeqKind::kDictItems;
  const bool b_tuple = b == SeqKind::kTuple || b == SeqKind::kDictItems;
  if (a_list || b_list) return a_list && b_list;
  if (a == SeqKind::kTuple || b == SeqKind::kTuple) return a_tuple && b_tuple && a == b;
  return a == b;
}

[[noreturn]] void fail_too_deep() {
  eval_fail("value nests deeper than " + std::to_string(kMaxValueDepth) +
            " levels (lists, dicts, tuples, generators, loop variables, bound methods)");
}

}  // namespace

uint32_t items_depth(const std::vector<Value>& items) {
  uint32_t depth = 0;
  for (const auto& item : items) depth = std::max(depth, value_depth(item));
  if (depth + 1 > kMaxValueDepth) fail_too_deep();
  return depth + 1;
}

uint32_t value_depth(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kSeq:
      return v.seq().depth;
    case Value::Kind::kDict:
      return v.dict().depth();
    case Value::Kind::kIterator:
      return v.iterator().depth;
    case Value::Kind::kCallable:
      return v.callable().depth();
    case Value::Kind::kObject:
      return v.object().depth();
    default:
      return 0;
  }
}

Value Value::undefined(std::string message) {
  return Value(Data(std::in_place_index<0>, Undefined{std::make_shared<const std::string>(std::move(message))}));
}

Value Value::from_seq(std::vector<Value> items, SeqKind kind) {
  auto s = std::make_shared<Sequence>();
  s->depth = items_depth(items);
  s->items = std::move(items);
  s->kind = kind;
  return Value(Data(std::in_place_index<6>, std::shared_ptr<const Sequence>(std::move(s))));
}

Value Value::from_dict(Dict d) {
  return Value(Data(std::in_place_index<7>, std::make_shared<const Dict>(std::move(d))));
}

Value Value::from_iterator(std::vector<Value> items, std::string type_name) {
  auto s = std::make_shared<IteratorState>();
  s->depth = items_depth(items);
  s->items = std::move(items);
  s->type_name = std::move(type_name);
  return Value(Data(std::in_place_index<8>, std::move(s)));
}

double Value::get_float() const {
  if (is_float()) return std::get<double>(data_);
  return static_cast<double>(get_int());
}

const void* Value::identity() const {
  switch (kind()) {
    case Kind::kString:
      return std::get<5>(data_).get();
    case Kind::kSeq:
      return std::get<6>(data_).get();
    case Kind::kDict:
      return std::get<7>(data_).get();
    case Kind::kIterator:
      return std::get<8>(data_).get();
    case Kind::kCallable:
      return std::get<9>(data_).get();
    case Kind::kObject:
      return std::get<10>(data_).get();
    default:
      return nullptr;
  }
}

const std::string& Value::undefined_message() const {
  const auto& u = std::get<Undefined>(data_);
  return u.message ? *u.message : generic_undefined_message();
}

std::string Value::type_name() const {
  switch (kind()) {
    case Kind::kUndefined:
      return "Undefined";
    case Kind::kNone:
      return "NoneType";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "str";
    case Kind::kSeq:
      switch (seq().kind) {
        case SeqKind::kList:
          return "list";
        case SeqKind::kTuple:
          return "tuple";
        case SeqKind::kDictKeys:
          return "dict_keys";
        case SeqKind::kDictValues:
          return "dict_values";
        case SeqKind::kDictItems:
          return "dict_items";
      }
      return "list";
    case Kind::kDict:
      return "dict";
    case Kind::kIterator:
      return iterator().type_name;
    case Kind::kCallable:
      return callable().type_name();
    case Kind::kObject:
      return object().type_name();
  }
  return "object";
}

bool truthy(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return false;
    case Value::Kind::kBool:
      return v.get_bool();
    case Value::Kind::kInt:
      return v.get_int() != 0;
    case Value::Kind::kFloat:
      return v.get_float() != 0.0;
    case Value::Kind::kString:
      return !v.str().empty();
    case Value::Kind::kSeq:
      return !v.seq().items.empty();
    case Value::Kind::kDict:
      return v.dict().size() != 0;
    default:
      return true;
  }
}

bool equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_integral() && b.is_integral()) return a.get_int() == b.get_int();
    return a.get_float() == b.get_float();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return true;
    case Value::Kind::kString:
      return a.str() == b.str();
    case Value::Kind::kSeq: {
      const auto& x = a.seq();
      const auto& y = b.seq();
      if (!seq_family_equal(x.kind, y.kind) || x.items.size() != y.items.size()) return false;
      for (size_t i = 0; i < x.items.size(); ++i)
        if (!equals(x.items[i], y.items[i])) return false;
      return true;
    }
    case Value::Kind::kDict: {
      const auto& x = a.dict();
      const auto& y = b.dict();
      if (x.size() != y.size()) return false;
      for (const auto& [k, val] : x.entries()) {
        const Value* other = y.find(k);
        if (!other || !equals(val, *other)) return false;
      }
      return true;
    }
    default:
      return a.identity() == b.identity();
  }
}

std::string hash_key(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return "u";
    case Value::Kind::kNone:
      return "n";
    case Value::Kind::kBool:
    case Value::Kind::kInt:
      return "i" + std::to_string(v.get_int());
    case Value::Kind::kFloat: {
      const double d = v.get_float();
      if (std::isfinite(d) && d == std::trunc(d) && std::fabs(d) < 9.2e18)
        return "i" + std::to_string(static_cast<int64_t>(d));
      return "f" + float_repr(d);
    }
    case Value::Kind::kString:
      return "s" + v.str();
    case Value::Kind::kSeq:
      if (v.seq().kind == SeqKind::kTuple) {
        std::string out = "t";
        for (const auto& item : v.seq().items) {
          const std::string k = hash_key(item);
          out += std::to_string(k.size()) + ":" + k;
        }
        return out;
      }
      break;
    case Value::Kind::kDict:
      break;
    default: {
      char buf[2 + sizeof(void*) * 2 + 1];
      std::snprintf(buf, sizeof(buf), "p%p", v.identity());
      return buf;
    }
  }
  eval_fail("unhashable type: '" + v.type_name() + "'");
}

const Value* Dict::find(const Value& key) const {
  const auto it = index_.find(hash_key(key));
  return it == index_.end() ? nullptr : &entries_[it->second].second;
}

const Value* Dict::find(std::string_view key) const {
  std::string k;
  k.reserve(key.size() + 1);
  k += 's';
  k += key;
  const auto it = index_.find(k);
  return it == index_.end() ? nullptr : &entries_[it->second].second;
}

void Dict::set(const Value& key, Value value) {
  const uint32_t depth = std::max(value_depth(key), value_depth(value)) + 1;
  if (depth > kMaxValueDepth) fail_too_deep();
  depth_ = std::max(depth_, depth);
  std::string k = hash_key(key);
  const auto it = index_.find(k);
  if (it != index_.end()) {
    entries_[it->second].second = std::move(value);
    return;
  }
  index_.emplace(std::move(k), entries_.size());
  entries_.emplace_back(key, std::move(value));
}

std::optional<Value> Namespace::attribute(std::string_view name) const {
  if (const Value* v = attrs_.find(name)) return *v;
  return std::nullopt;
}

std::string Namespace::repr() const {
  return namespace_repr(*this);
}

void Namespace::set(const std::string& name, Value value) {
  if (!name.empty() && name[0] == '_')
    eval_fail("Chat templates cannot store underscore-prefixed attributes on a namespace, but got '" + name +
              "'. Please rename the attribute.");
  attrs_.set(Value::from_string(name), std::move(value));
}

}  // namespace hftrain::tokenizer::jinja
