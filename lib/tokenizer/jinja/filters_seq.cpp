// Sequence filters: batch, count/length, dictsort, first, items, join, last, list, map, max, min,
// reject, rejectattr, reverse, select, selectattr, sort, sum, unique. Like jinja2, map/select/reject/
// selectattr/rejectattr/unique/items/batch return generators (single pass, no len()), and reverse
// returns an iterator for lists.
#include <algorithm>
#include <charconv>
#include <system_error>
#include <unordered_set>

#include "tokenizer/jinja/args.h"
#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/error.h"
#include "tokenizer/jinja/filters_impl.h"
#include "tokenizer/jinja/interpreter.h"
#include "tokenizer/jinja/operators.h"
#include "tokenizer/jinja/py_format.h"
#include "tokenizer/jinja/text.h"

namespace hftrain::tokenizer::jinja::detail {
namespace {

Value generator(std::vector<Value> items) {
  return Value::from_iterator(std::move(items));
}

Value f_length(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs("length", args, {});
  return Value::from_int(length(v));
}

Value f_list(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs("list", args, {});
  return Value::from_seq(iterate(v));
}

Value f_first(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs("first", args, {});
  if (v.is_iterator()) {
    auto& it = v.iterator();
    if (it.pos < it.items.size()) return it.items[it.pos++];
  } else if (v.is_seq()) {
    if (!v.seq().items.empty()) return v.seq().items.front();
  } else {
    std::vector<Value> items = iterate(v);
    if (!items.empty()) return items.front();
  }
  return Value::undefined("No first item, sequence was empty.");
}

Value f_last(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs("last", args, {});
  if (v.is_iterator() || !(v.is_seq() || v.is_dict() || v.is_string() || v.is_undefined()))
    eval_fail("'" + v.type_name() + "' object is not reversible");
  if (v.is_seq()) {
    if (!v.seq().items.empty()) return v.seq().items.back();
  } else {
    std::vector<Value> items = iterate(v);
    if (!items.empty()) return items.back();
  }
  return Value::undefined("No last item, sequence was empty.");
}

Value f_join(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("join", args, {"d", "attribute"});
  const std::string sep = a.has(0) ? to_str(a.get(0)) : "";
  std::vector<Value> items = iterate(v);
  std::string out;
  const bool by_attr = a.has(1) && !a.get(1).is_none();
  const AttrGetter getter(a.get_or(1, Value::none()), false);
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += sep;
    out += to_str(by_attr ? getter(items[i]) : items[i]);
    if (out.size() > kMaxBuiltSize) eval_fail_unsupported("string result too large");
  }
  return Value::from_string(std::move(out));
}

// Keys for sort: one per comma-separated attribute (jinja2's make_multi_attrgetter).
std::vector<AttrGetter> multi_getters(const Value& attribute, bool lower) {
  std::vector<AttrGetter> getters;
  if (attribute.is_string()) {
    const std::string comma = ",";
    for (const auto& part : text::split(attribute.str(), &comma, -1, false))
      getters.emplace_back(Value::from_string(part), lower);
  } else {
    getters.emplace_back(attribute, lower);
  }
  return getters;
}

Value f_sort(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("sort", args, {"reverse", "case_sensitive", "attribute"});
  const bool reverse = a.bool_or(0, false);
  const std::vector<AttrGetter> getters = multi_getters(a.get_or(2, Value::none()), !a.bool_or(1, false));
  std::vector<Value> items = iterate(v);
  std::vector<std::pair<Value, size_t>> keyed;
  for (size_t i = 0; i < items.size(); ++i) {
    std::vector<Value> key;
    for (const auto& g : getters) key.push_back(g(items[i]));
    keyed.emplace_back(Value::from_seq(std::move(key)), i);
  }
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    return reverse ? py_compare(y.first, x.first) < 0 : py_compare(x.first, y.first) < 0;
  });
  std::vector<Value> out;
  for (const auto& k : keyed) out.push_back(items[k.second]);
  return Value::from_seq(std::move(out));
}

Value f_dictsort(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("dictsort", args, {"case_sensitive", "by", "reverse"});
  require_defined(v);
  if (!v.is_dict()) eval_fail("'" + v.type_name() + "' object has no attribute 'items'");
  const std::string by = a.has(1) ? to_str(a.get(1)) : "key";
  if (by != "key" && by != "value") eval_fail("You can only sort by either \"key\" or \"value\"");
  const size_t pos = by == "key" ? 0 : 1;
  const bool lower = !a.bool_or(0, false);
  const bool reverse = a.bool_or(2, false);
  std::vector<Value> items;
  for (const auto& [k, val] : v.dict().entries()) items.push_back(Value::from_seq({k, val}, SeqKind::kTuple));
  auto key = [&](const Value& item) {
    const Value& x = item.seq().items[pos];
    return lower && x.is_string() ? Value::from_string(text::lower(x.str())) : x;
  };
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    return reverse ? py_compare(key(y), key(x)) < 0 : py_compare(key(x), key(y)) < 0;
  });
  return Value::from_seq(std::move(items));
}

Value f_unique(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("unique", args, {"case_sensitive", "attribute"});
  const AttrGetter getter(a.get_or(1, Value::none()), !a.bool_or(0, false));
  std::unordered_set<std::string> seen;
  std::vector<Value> out;
  for (const auto& item : iterate(v))
    if (seen.insert(hash_key(getter(item))).second) out.push_back(item);
  return generator(std::move(out));
}

Value min_max(const Value& v, CallArgs& args, bool want_max) {
  BoundArgs a(want_max ? "max" : "min", args, {"case_sensitive", "attribute"});
  const AttrGetter getter(a.get_or(1, Value::none()), !a.bool_or(0, false));
  std::vector<Value> items = iterate(v);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  size_t best = 0;
  Value best_key = getter(items[0]);
  for (size_t i = 1; i < items.size(); ++i) {
    Value k = getter(items[i]);
    if (want_max ? py_compare(k, best_key) > 0 : py_compare(k, best_key) < 0) {
      best = i;
      best_key = std::move(k);
    }
  }
  return items[best];
}

Value f_max(Interpreter&, const Value& v, CallArgs& args) {
  return min_max(v, args, true);
}
Value f_min(Interpreter&, const Value& v, CallArgs& args) {
  return min_max(v, args, false);
}

Value f_sum(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("sum", args, {"attribute", "start"});
  const bool by_attr = a.has(0) && !a.get(0).is_none();
  const AttrGetter getter(a.get_or(0, Value::none()), false);
  Value total = a.get_or(1, Value::from_int(0));
  if (total.is_string()) eval_fail("sum() can't sum strings [use ''.join(seq) instead]");
  const std::vector<Value> items = iterate(v);
  size_t i = 0;
  if (total.is_list() || total.is_tuple()) {
    // Lists (or tuples) add up in one buffer: `+` would copy the sum so far at every item.
    const SeqKind kind = total.seq().kind;
    std::vector<Value> sum = total.seq().items;
    for (; i < items.size(); ++i) {
      const Value x = by_attr ? getter(items[i]) : items[i];
      if (!x.is_seq() || x.seq().kind != kind) break;  // `+` raises Python's error below
      if (sum.size() + x.seq().items.size() > kMaxBuiltItems)
        eval_fail_unsupported("a " + total.type_name() + " of more than " + std::to_string(kMaxBuiltItems) + " items");
      sum.insert(sum.end(), x.seq().items.begin(), x.seq().items.end());
    }
    total = Value::from_seq(std::move(sum), kind);
  }
  for (; i < items.size(); ++i) total = binary_op(BinaryOp::kAdd, total, by_attr ? getter(items[i]) : items[i]);
  return total;
}

Value f_map(Interpreter& interp, const Value& v, CallArgs& args) {
  std::vector<Value> items = iterate(v);
  std::vector<Value> out;
  if (args.positional.empty()) {
    Value attribute, fallback = Value::none();
    bool has_attribute = false;
    for (const auto& [key, value] : args.keyword) {
      if (key == "attribute") {
        attribute = value;
        has_attribute = true;
      } else if (key == "default") {
        fallback = value;
      } else {
        eval_fail("Unexpected keyword argument '" + key + "'");
      }
    }
    if (!has_attribute) eval_fail("map requires a filter argument");
    const AttrGetter getter(attribute, false, fallback);
    for (const auto& item : items) out.push_back(getter(item));
    return generator(std::move(out));
  }
  const Value name = args.positional[0];
  if (!name.is_string() || !is_known_filter(name.str()))
    eval_fail_unsupported("unsupported filter `" + to_str(name) + "` in map()");
  // The filter's arguments, copied once (filters do not change their arguments) and counted as work:
  // map('map', 'map', ...) copies them again at each level.
  CallArgs rest;
  rest.positional.assign(args.positional.begin() + 1, args.positional.end());
  rest.keyword = args.keyword;
  interp.step(rest.positional.size() + rest.keyword.size());
  for (const auto& item : items) out.push_back(interp.filter(name.str(), item, rest));
  return generator(std::move(out));
}

Value select_or_reject(Interpreter& interp, const Value& v, CallArgs& args, bool select, bool by_attr) {
  if (!truthy(v)) return generator({});
  size_t off = 0;
  std::optional<AttrGetter> getter;
  if (by_attr) {
    if (args.positional.empty()) eval_fail("Missing parameter for attribute name");
    getter.emplace(args.positional[0], false);
    off = 1;
  }
  std::optional<std::string> test;
  CallArgs rest;
  if (args.positional.size() > off) {
    const Value& name = args.positional[off];
    if (!name.is_string() || !is_known_test(name.str()))
      eval_fail_unsupported("unsupported test `" + to_str(name) + "`");
    test = name.str();
    rest.positional.assign(args.positional.begin() + static_cast<std::ptrdiff_t>(off + 1), args.positional.end());
  }
  rest.keyword = args.keyword;
  std::vector<Value> out;
  for (const auto& item : iterate(v)) {
    interp.step();
    const Value x = getter ? (*getter)(item) : item;
    bool pass;
    if (test) {
      pass = interp.test(*test, x, rest);  // tests do not change their arguments
    } else {
      pass = truthy(x);
    }
    if (pass == select) out.push_back(item);
  }
  return generator(std::move(out));
}

Value f_select(Interpreter& in, const Value& v, CallArgs& a) {
  return select_or_reject(in, v, a, true, false);
}
Value f_reject(Interpreter& in, const Value& v, CallArgs& a) {
  return select_or_reject(in, v, a, false, false);
}
Value f_selectattr(Interpreter& in, const Value& v, CallArgs& a) {
  return select_or_reject(in, v, a, true, true);
}
Value f_rejectattr(Interpreter& in, const Value& v, CallArgs& a) {
  return select_or_reject(in, v, a, false, true);
}

Value f_reverse(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs("reverse", args, {});
  if (v.is_string()) {
    std::u32string cps = text::to_u32(v.str());
    std::reverse(cps.begin(), cps.end());
    return Value::from_string(text::to_utf8(cps));
  }
  if (v.is_iterator()) {
    std::vector<Value> items = iterate(v);
    std::reverse(items.begin(), items.end());
    return Value::from_seq(std::move(items));
  }
  if (!(v.is_seq() || v.is_dict() || v.is_undefined())) eval_fail("argument must be iterable");
  std::vector<Value> items = iterate(v);
  std::reverse(items.begin(), items.end());
  const char* type = v.is_dict() ? "dict_reversekeyiterator" : v.is_tuple() ? "reversed" : "list_reverseiterator";
  return Value::from_iterator(std::move(items), type);
}

Value f_batch(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("batch", args, {"linecount", "fill_with"});
  const int64_t n = a.int_or(0, 0);
  if (n <= 0) eval_fail("batch() linecount must be positive");
  if (static_cast<uint64_t>(n) > kMaxBuiltItems) eval_fail_unsupported("batch() linecount too large");
  std::vector<Value> out, row;
  for (const auto& item : iterate(v)) {
    if (static_cast<int64_t>(row.size()) == n) {
      out.push_back(Value::from_seq(std::move(row)));
      row.clear();
    }
    row.push_back(item);
  }
  if (!row.empty()) {
    if (a.has(1) && !a.get(1).is_none())
      while (static_cast<int64_t>(row.size()) < n) row.push_back(a.get(1));
    out.push_back(Value::from_seq(std::move(row)));
  }
  return generator(std::move(out));
}

Value f_items(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs("items", args, {});
  if (v.is_undefined()) return generator({});
  if (!v.is_dict()) eval_fail("Can only get item pairs from a mapping.");
  std::vector<Value> out;
  for (const auto& [k, val] : v.dict().entries()) out.push_back(Value::from_seq({k, val}, SeqKind::kTuple));
  return generator(std::move(out));
}

}  // namespace

AttrGetter::AttrGetter(const Value& attribute, bool lower, Value fallback)
    : lower_(lower), fallback_(std::move(fallback)) {
  if (attribute.is_string()) {
    const std::string sep = ".";
    for (auto& part : text::split(attribute.str(), &sep, -1, false)) {
      const bool digits = !part.empty() && part.find_first_not_of("0123456789") == std::string::npos;
      if (!digits) {
        parts_.push_back(Value::from_string(std::move(part)));
        continue;
      }
      int64_t index = 0;  // jinja2 looks a part of digits up as an int
      const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), index);
      if (ec != std::errc() || end != part.data() + part.size())
        eval_fail_unsupported("integer overflow: the attribute part '" + part +
                              "' is beyond 64 bits (the interpreter's integers are 64-bit)");
      parts_.push_back(Value::from_int(index));
    }
  } else if (!attribute.is_none()) {
    parts_.push_back(attribute);
  }
}

Value AttrGetter::operator()(const Value& item) const {
  Value v = item;
  for (const auto& p : parts_) {
    v = get_item(v, p);
    if (!fallback_.is_none() && v.is_undefined()) v = fallback_;
  }
  if (lower_ && v.is_string()) return Value::from_string(text::lower(v.str()));
  return v;
}

const FilterTable& sequence_filters() {
  static const FilterTable table = {
      {"batch", f_batch},
      {"count", f_length},
      {"dictsort", f_dictsort},
      {"first", f_first},
      {"items", f_items},
      {"join", f_join},
      {"last", f_last},
      {"length", f_length},
      {"list", f_list},
      {"map", f_map},
      {"max", f_max},
      {"min", f_min},
      {"reject", f_reject},
      {"rejectattr", f_rejectattr},
      {"reverse", f_reverse},
      {"select", f_select},
      {"selectattr", f_selectattr},
      {"sort", f_sort},
      {"sum", f_sum},
      {"unique", f_unique},
  };
  return table;
}

}  // namespace hftrain::tokenizer::jinja::detail
