// `hftrain tokenizer render --chat FILE.jsonl --tokenizer PATH [--template T] [--limit N]`: shows
// what a chat fine-tuning run learns from. Each record is rendered through the chat template that
// data.chat_template would choose (the model's own with `auto`), exactly as the token cache gets it,
// and printed with the loss-carrying text marked: ⟦...⟧ (or green on a terminal), followed by its
// token count and how many of those tokens carry loss.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "commands.h"
#include "data/segment_encoding.h"
#include "data/source.h"
#include "model/weights/saved_model.h"
#include "tokenizer/chat_template.h"
#include "util/error.h"

namespace hftrain::app {
namespace {
namespace fs = std::filesystem;

struct RenderArgs {
  std::string chat;
  std::string tokenizer;
  std::string chat_template = "auto";
  size_t limit = 5;
  std::string messages_field = "messages";
};

int run_render(const RenderArgs& a) {
  fs::path tokenizer_file(a.tokenizer);
  std::error_code ec;
  // A Hugging Face directory holds tokenizer.json itself; a run directory names its model's.
  if (fs::is_directory(tokenizer_file, ec)) {
    tokenizer_file = fs::is_regular_file(tokenizer_file / model::kTokenizerFile, ec)
                         ? tokenizer_file / model::kTokenizerFile
                         : model::resolve_model_dir(tokenizer_file) / model::kTokenizerFile;
  }
  const auto tokenizer = model::load_tokenizer_file(tokenizer_file);
  data::ChatTemplate format;
  format.model_template = tokenizer::resolve_chat_template(a.chat_template, tokenizer_file);
  data::SourceSpec spec;
  spec.path = a.chat;
  spec.format = data::SourceFormat::kChat;
  spec.messages_field = a.messages_field;
  const bool tty = ::isatty(STDOUT_FILENO) != 0;
  const std::string open = tty ? "\x1b[32m" : "⟦";
  const std::string close = tty ? "\x1b[0m" : "⟧";
  std::cout << "template: "
            << (format.model_template ? format.model_template->name() : std::string("hftrain (built in)")) << "\n";
  size_t shown = 0;
  try {
    data::read_documents(spec, a.chat, format, [&](data::Document&& doc) {
      if (shown == a.limit) throw std::out_of_range("enough");
      // Counted as the token cache counts them (data/segment_encoding.h).
      const data::EncodedSegments encoded = data::encode_segments(*tokenizer, doc);
      const size_t tokens = encoded.ids.size();
      size_t trained = 0;
      std::string text;
      for (size_t s = 0; s < doc.segments.size(); ++s) {
        const auto& segment = doc.segments[s];
        if (segment.train) trained += encoded.segment_ends[s] - (s ? encoded.segment_ends[s - 1] : 0);
        text += segment.train ? open + segment.text + close : segment.text;
      }
      // The end-of-text token every document ends with carries loss.
      std::cout << "── " << doc.origin << ": " << tokens + 1 << " tokens, " << trained + 1 << " carry loss\n"
                << text << "\n";
      ++shown;
    });
  } catch (const std::out_of_range&) {
    std::cout << "(first " << a.limit << " records; --limit N shows more)\n";
  }
  return util::kExitOk;
}

}  // namespace

void add_tokenizer_render_command(CLI::App& tokenizer_app, Runner& runner) {
  auto a = std::make_shared<RenderArgs>();
  CLI::App* sub = tokenizer_app.add_subcommand(
      "render", "Show chat records as training sees them: the chat template's text, loss-carrying parts marked");
  sub->add_option("--chat", a->chat, "A chat JSONL file (messages or prompt/response records)")->required();
  sub->add_option("--tokenizer", a->tokenizer, "A tokenizer.json, or a model or run directory")->required();
  sub->add_option("--template", a->chat_template,
                  "As data.chat_template: auto (the tokenizer's own), hftrain, chatml, or a file or directory")
      ->capture_default_str();
  sub->add_option("--messages-field", a->messages_field, "As data.messages_field")->capture_default_str();
  sub->add_option("--limit", a->limit, "Records to show")->capture_default_str()->check(CLI::Range(1, 1000000));
  sub->callback([a, &runner] { runner = [a] { return run_render(*a); }; });
}

}  // namespace hftrain::app
