// Fuzz target for the JSON Lines reader of training data (data/jsonl_reader.h), as the loader
// calls it: the input is a whole file, checked to be UTF-8 text first, then read three ways: plain
// documents (the "text" field), conversations in hftrain's own format, and conversations rendered
// through a model's chat template (ChatML with generation blocks). Any util::DataError is a correct
// answer to bad input; every other exception, crash, hang or sanitizer report is a bug. Accepted
// documents must keep the reader's promises: an origin "fuzz.jsonl:<line>" whose line numbers
// never go back, at least one segment, and in a conversation at least one trained segment.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "data/jsonl_reader.h"
#include "tokenizer/chat_template.h"
#include "util/error.h"
#include "util/strings.h"

namespace {

[[noreturn]] void broken(const std::string& what) {
  std::cerr << "JSONL reader broke a promise: " << what << "\n";
  std::abort();
}

std::shared_ptr<const hftrain::tokenizer::ChatTemplate> chatml() {
  static const auto t = std::make_shared<const hftrain::tokenizer::ChatTemplate>(
      "{% for m in messages %}<|im_start|>{{ m.role }}\n"
      "{% if m.role == 'assistant' %}{% generation %}{{ m.content }}<|im_end|>{% endgeneration %}"
      "{% else %}{{ m.content }}<|im_end|>{% endif %}\n{% endfor %}"
      "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}",
      "the fuzz target's ChatML", nlohmann::ordered_json::object());
  return t;
}

size_t line_of(const std::string& origin) {
  const auto colon = origin.rfind(':');
  if (origin.rfind("fuzz.jsonl:", 0) != 0 || colon == std::string::npos) broken("origin '" + origin + "'");
  return std::stoul(origin.substr(colon + 1));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hftrain::data;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (!hftrain::util::check_utf8_text(bytes).empty()) return 0;  // the loader refuses it before
  const SourceSpec spec{.path = "fuzz.jsonl"};
  ChatTemplate builtin;
  ChatTemplate model;
  model.model_template = chatml();
  const struct {
    bool chat;
    const ChatTemplate* tmpl;
  } ways[] = {{false, &builtin}, {true, &builtin}, {true, &model}};
  for (const auto& way : ways) {
    size_t last_line = 0;
    try {
      read_jsonl(spec, "fuzz.jsonl", bytes, way.chat, *way.tmpl, [&](Document&& doc) {
        const size_t line = line_of(doc.origin);
        if (line <= last_line) broken("line numbers went back");
        last_line = line;
        if (doc.segments.empty()) broken("a document without segments");
        if (!way.chat) return;
        bool trained = false;
        for (const auto& s : doc.segments) trained = trained || s.train;
        if (!trained) broken("a conversation with nothing to train on at line " + std::to_string(line));
      });
    } catch (const hftrain::util::DataError&) {
      // a clean rejection
    }
  }
  return 0;
}
