// String filters: capitalize, center, e/escape, forceescape, indent, lower, replace, safe, string,
// title, trim, upper, wordcount.
#include "tokenizer/jinja/args.h"
#include "tokenizer/jinja/error.h"
#include "tokenizer/jinja/filters_impl.h"
#include "tokenizer/jinja/operators.h"
#include "tokenizer/jinja/py_format.h"
#include "tokenizer/jinja/text.h"

namespace hftrain::tokenizer::jinja::detail {
namespace {

Value str_value(std::string s) {
  return Value::from_string(std::move(s));
}

Value f_upper(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs("upper", args, {});
  return str_value(text::upper(to_str(v)));
}

Value f_lower(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs("lower", args, {});
  return str_value(text::lower(to_str(v)));
}

Value f_capitalize(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs("capitalize", args, {});
  return str_value(text::capitalize(to_str(v)));
}

bool title_separator(uint32_t c) {
  return c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || text::is_space(c);
}

Value f_title(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs("title", args, {});
  const std::string s = to_str(v);
  std::string out;
  bool word_start = true;
  for (size_t i = 0, len = 0; i < s.size(); i += len) {
    const uint32_t c = text::decode(s, i, len);
    const bool sep = title_separator(c);
    std::string one;
    text::append_utf8(one, c);
    out += word_start ? text::upper(one) : text::lower(one);
    word_start = sep;
  }
  return str_value(std::move(out));
}

Value f_trim(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("trim", args, {"chars"});
  return str_value(text::strip(to_str(v), a.str_or_null(0), true, true));
}

Value f_replace(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("replace", args, {"old", "new", "count"});
  const int64_t count = a.has(2) && !a.get(2).is_none() ? a.int_or(2, -1) : -1;
  return str_value(bounded_replace(to_str(v), to_str(a.get(0)), to_str(a.get(1)), count));
}

Value f_string(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs("string", args, {});
  return v.is_string() ? v : str_value(to_str(v));
}

Value f_safe(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs("safe", args, {});
  return v.is_string() ? v : str_value(to_str(v));
}

Value f_escape(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs("escape", args, {});
  std::string out;
  for (char c : to_str(v)) {
    if (out.size() > kMaxBuiltSize) check_built_size(out.size());  // entities grow it up to 5 times
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return str_value(std::move(out));
}

Value f_center(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("center", args, {"width"});
  const std::string s = to_str(v);
  const int64_t width = a.int_or(0, 80);
  const auto len = static_cast<int64_t>(text::length(s));
  if (width <= len) return str_value(s);
  check_built_size(static_cast<uint64_t>(width));
  const int64_t total = width - len;
  const int64_t left = total / 2 + (total & width & 1);
  return str_value(std::string(static_cast<size_t>(left), ' ') + s +
                   std::string(static_cast<size_t>(total - left), ' '));
}

Value f_indent(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("indent", args, {"width", "first", "blank"});
  require_defined(v);
  if (!v.is_string()) eval_fail("can only concatenate " + v.type_name() + " (not \"str\") to " + v.type_name());
  std::string indention;
  if (a.has(0) && a.get(0).is_string()) {
    indention = a.get(0).str();
  } else {
    const int64_t width = a.int_or(0, 4);
    if (width > 0) check_built_size(static_cast<uint64_t>(width));
    indention = std::string(static_cast<size_t>(std::max<int64_t>(width, 0)), ' ');
  }
  const std::vector<std::string> lines = text::splitlines(v.str() + "\n");
  const bool first = a.bool_or(1, false), blank = a.bool_or(2, false);
  // The indention repeats on every line: refuse a result past kMaxBuiltSize before building it.
  uint64_t size = first ? indention.size() : 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    size += lines[i].size() + (i ? 1 : 0);
    if (i && (blank || !lines[i].empty())) size += indention.size();
    check_built_size(size);
  }
  std::string rv;
  rv.reserve(static_cast<size_t>(size));
  if (first) rv += indention;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i) {
      rv += '\n';
      if (blank || !lines[i].empty()) rv += indention;
    }
    rv += lines[i];
  }
  return str_value(std::move(rv));
}

Value f_wordcount(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs("wordcount", args, {});
  const std::string s = to_str(v);
  int64_t words = 0;
  bool in_word = false;
  for (size_t i = 0, len = 0; i < s.size(); i += len) {
    const uint32_t c = text::decode(s, i, len);
    const bool word = c == '_' || text::is_digit(c) || text::is_alpha(c);
    if (word && !in_word) ++words;
    in_word = word;
  }
  return Value::from_int(words);
}

}  // namespace

const FilterTable& text_filters() {
  static const FilterTable table = {
      {"capitalize", f_capitalize}, {"center", f_center},       {"e", f_escape},
      {"escape", f_escape},         {"forceescape", f_escape},  {"indent", f_indent},
      {"lower", f_lower},           {"replace", f_replace},     {"safe", f_safe},
      {"string", f_string},         {"title", f_title},         {"trim", f_trim},
      {"upper", f_upper},           {"wordcount", f_wordcount},
  };
  return table;
}

}  // namespace hftrain::tokenizer::jinja::detail
