// A Hugging Face chat template (`chat_template` in tokenizer_config.json), parsed once and rendered
// byte for byte as transformers' apply_chat_template renders it: jinja2's ImmutableSandboxedEnvironment
// with trim_blocks and lstrip_blocks, the loopcontrols extension ({% break %}, {% continue %}),
// transformers' {% generation %} blocks, raise_exception(), strftime_now() and its tojson.
//
// Supported: {{ }}, {% %}, {# #} with -/+ whitespace control, {% raw %}; if/elif/else; for (else,
// `if` filter, tuple unpacking, loop.index/index0/revindex/revindex0/first/last/length/previtem/
// nextitem/cycle/changed, break/continue); set (names, tuples, namespace attributes, block set with
// filters); macro (defaults, varargs, kwargs, caller) and call blocks; filter blocks; with;
// generation. Expressions: literals, attribute/item/slice access, arithmetic, ~, comparisons, in,
// and/or/not, inline if, filters, tests, calls with keyword arguments. The filters, tests, methods and
// globals are listed in builtins.h.
// Not supported (TemplateError naming the construct): extends/include/import/block, recursive for
// loops, `*args`/`**kwargs` in calls, printf-style `%` on strings, str.format specs, the filters and
// tests builtins.h does not list (refused when parsed, even inside a branch that would not run,
// where jinja2 only fails if the branch runs), integers beyond 64 bits (Python's are unbounded),
// non-ASCII identifiers. Known differences in printing: range() prints as a list (Python:
// `range(0, 3)`), generators as `<generator object>` (Python adds an address); text.h lists the case-mapping limits.
//
// Limits (hostile templates fail cleanly): statements and expressions nest at most 256 levels when
// parsed (parser.h), rendering nests at most 1024 levels including macro recursion, runs at most 10
// million statements and loop iterations and writes at most 256 MiB (interpreter.h); values nest at
// most 512 levels (value.h); range() stops at 100000 items.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokenizer/jinja/error.h"

namespace hftrain::tokenizer::jinja {

struct TemplateAst;

struct RenderResult {
  std::string text;
  // Byte ranges [begin, end) of `text` produced inside {% generation %} ... {% endgeneration %}
  // blocks (transformers' AssistantTracker extension), in the order the blocks finished.
  std::vector<std::pair<size_t, size_t>> generation_spans;
};

class Template {
 public:
  // Parses; throws TemplateError for a syntax error or any construct outside the supported subset,
  // naming `name`, the line (and column) and the construct ("unsupported filter `wordwrap`").
  static Template parse(std::string_view source, std::string name);

  // Renders with `context`, a JSON object of the template's variables (messages, tools,
  // add_generation_prompt, bos_token, ...; chat_context.h builds it as transformers does). An
  // ordered_json, so that objects keep their key order as in Python. Throws TemplateError for
  // raise_exception(msg) (message() == msg) and for runtime errors, naming the line. Thread-safe: a
  // Template is immutable and each render has its own state.
  RenderResult render(const nlohmann::ordered_json& context) const;

  bool has_generation_blocks() const;
  const std::string& name() const;

 private:
  explicit Template(std::shared_ptr<const TemplateAst> ast) : ast_(std::move(ast)) {}
  std::shared_ptr<const TemplateAst> ast_;
};

}  // namespace hftrain::tokenizer::jinja
