// Renders a chat template with hftrain's Jinja interpreter for the conformance script
// (tests/conformance/chat_template_jinja.py):
//   jinja_tool [--raw] TEMPLATE CONTEXTS.json
// CONTEXTS.json holds one context (an object) or several (an array). By default a context is
// transformers' render_jinja_template arguments, {"messages", "tools", "documents",
// "add_generation_prompt", "kwargs"}, turned into the render context by make_chat_context; with --raw
// it is the render context itself. Prints one JSON result per context, one per line:
//   {"text": "...", "generation_spans": [[begin, end], ...]}     (byte offsets)
//   {"error": {"cause": "raised|syntax|unsupported|runtime|limit", "message": "...", "line": N}}
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokenizer/jinja/chat_context.h"
#include "tokenizer/jinja/template.h"

using hftrain::tokenizer::jinja::ChatTemplateInputs;
using hftrain::tokenizer::jinja::Template;
using hftrain::tokenizer::jinja::TemplateError;
using Json = nlohmann::ordered_json;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const char* cause_name(TemplateError::Cause c) {
  switch (c) {
    case TemplateError::Cause::kSyntax:
      return "syntax";
    case TemplateError::Cause::kUnsupported:
      return "unsupported";
    case TemplateError::Cause::kRaised:
      return "raised";
    case TemplateError::Cause::kRuntime:
      return "runtime";
    case TemplateError::Cause::kLimit:
      return "limit";
  }
  return "runtime";
}

Json error_json(const TemplateError& e) {
  return Json{{"error", {{"cause", cause_name(e.cause())}, {"message", e.message()}, {"line", e.line()}}}};
}

Json render_one(const Template& t, const Json& input, bool raw) {
  Json context = input;
  if (!raw) {
    ChatTemplateInputs in;
    in.messages = input.value("messages", Json::array());
    in.tools = input.value("tools", Json());
    in.documents = input.value("documents", Json());
    in.add_generation_prompt = input.value("add_generation_prompt", false);
    in.extra = input.value("kwargs", Json::object());
    context = make_chat_context(in);
  }
  try {
    const auto r = t.render(context);
    Json spans = Json::array();
    for (const auto& [b, e] : r.generation_spans) spans.push_back({b, e});
    return Json{{"text", r.text}, {"generation_spans", spans}};
  } catch (const TemplateError& e) {
    return error_json(e);
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool raw = false;
  int arg = 1;
  if (arg < argc && std::string(argv[arg]) == "--raw") {
    raw = true;
    ++arg;
  }
  if (argc - arg != 2) {
    std::cerr << "usage: jinja_tool [--raw] TEMPLATE CONTEXTS.json\n";
    return 2;
  }
  try {
    const std::string source = read_file(argv[arg]);
    const Json contexts = Json::parse(read_file(argv[arg + 1]));
    const std::vector<Json> inputs =
        contexts.is_array() ? contexts.get<std::vector<Json>>() : std::vector<Json>{contexts};
    std::optional<Template> t;
    Json parse_error;
    try {
      t = Template::parse(source, argv[arg]);
    } catch (const TemplateError& e) {
      parse_error = error_json(e);
    }
    for (const auto& input : inputs)
      std::cout << (t ? render_one(*t, input, raw) : parse_error).dump(-1, ' ', false, Json::error_handler_t::replace)
                << "\n";
  } catch (const std::exception& e) {
    std::cerr << "jinja_tool: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
