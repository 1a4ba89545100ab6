// Fuzz target for chat templates (tokenizer/jinja): the input is a template's source. It is parsed
// and, when accepted, rendered with a small conversation (system, user, assistant with a tool call,
// tool). Any util::DataError (TemplateError: syntax, unsupported construct, raise_exception, a
// runtime error or a limit) is a correct answer; every other exception, crash, hang or sanitizer
// report is a bug. A render must stay within its output limit and report generation spans inside
// its text (begin <= end <= size). The spans are not checked for order: like transformers, the
// engine reports them in the order their blocks finished, and a block nested in another, inside a
// macro or in a call, set or filter block finishes out of text order (ChatTemplate::
// render_for_training sorts them).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "tokenizer/jinja/interpreter.h"
#include "tokenizer/jinja/template.h"
#include "util/error.h"

namespace {

[[noreturn]] void broken(const std::string& what) {
  std::cerr << "chat template engine broke a promise: " << what << "\n";
  std::abort();
}

const nlohmann::ordered_json& context() {
  static const nlohmann::ordered_json c = nlohmann::ordered_json::parse(R"({
    "messages": [
      {"role": "system", "content": "Be brief."},
      {"role": "user", "content": "What is 2 + 2?"},
      {"role": "assistant", "content": "", "tool_calls": [
        {"type": "function", "function": {"name": "add", "arguments": {"a": 2, "b": 2}}}]},
      {"role": "tool", "content": "4"},
      {"role": "assistant", "content": "4."}],
    "tools": [{"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}],
    "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>"})");
  return c;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using hftrain::tokenizer::jinja::Template;
  const std::string_view source(reinterpret_cast<const char*>(data), size);
  try {
    const Template t = Template::parse(source, "fuzz.jinja");
    const auto result = t.render(context());
    if (result.text.size() > hftrain::tokenizer::jinja::kMaxOutputBytes) broken("output past its limit");
    for (const auto& [begin, end] : result.generation_spans)
      if (begin > end || end > result.text.size()) broken("a generation span outside the text");
  } catch (const hftrain::util::DataError&) {
    // a clean refusal
  }
  return 0;
}
