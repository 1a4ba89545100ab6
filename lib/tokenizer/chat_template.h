// A model's chat template, ready to render conversations for training (text plus the spans that
// carry loss) and prompts for generation, exactly as transformers' apply_chat_template renders them
// (the template language: jinja/template.h).
//
// Where it comes from (data.chat_template):
//   auto      the tokenizer's own: chat_template.jinja next to tokenizer.json, else the
//             "chat_template" of tokenizer_config.json there (a string, or a list of named templates:
//             "default", else the first); none: hftrain's own format (nullptr here, data/source.h)
//   hftrain   hftrain's own format (nullptr)
//   chatml    the built-in ChatML template (<|im_start|>role\ncontent<|im_end|>\n)
//   FILE      a Jinja file, or a tokenizer_config.json whose chat_template is used
// The template sees bos_token, eos_token, unk_token and pad_token from tokenizer_config.json.
//
// Loss spans: the bytes a {% generation %} block writes when the template has such blocks; otherwise
// each assistant message's span is derived from prefixes: it starts where the rendering of the
// messages before it, with the generation prompt, ends, and ends where the rendering up to and
// including it ends (so the end-of-turn text that closes it, <|im_end|> or <|eot_id|>, carries loss);
// a special token (bos/eos/unk/pad) that the template writes only after the last message (Phi-3's
// eos_token) belongs to the last assistant turn alone.
// A template whose renderings are not prefixes of each other that way is refused, naming it.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokenizer/jinja/template.h"

namespace hftrain::tokenizer {

struct ChatRendering {
  std::string text;
  std::vector<std::pair<size_t, size_t>> train_spans;  // byte ranges of `text`, in order, disjoint
};

class ChatTemplate {
 public:
  // `name` says where the template came from, for messages ("tokenizer_config.json in DIR").
  // `variables`: bos_token and the like. Throws jinja::TemplateError (a DataError) when it does not parse.
  ChatTemplate(const std::string& source, std::string name, nlohmann::ordered_json variables);

  // `messages` is a JSON array of {"role", "content", ...}; `tools` null or an array.
  // Throws jinja::TemplateError for raise_exception and template errors; DataError when the
  // template is not prefix-stable (see above) or the conversation has no assistant message.
  ChatRendering render_for_training(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools) const;
  // The prompt for generation: the messages plus the generation prompt.
  std::string render_prompt(const nlohmann::ordered_json& messages) const;

  const std::string& name() const { return name_; }
  const std::string& source() const { return source_; }
  bool has_generation_blocks() const { return template_.has_generation_blocks(); }
  // Changes whenever a rendering could: part of the token cache's key.
  std::string fingerprint() const;

 private:
  std::string render(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools, bool prompt,
                     jinja::RenderResult* full = nullptr) const;

  jinja::Template template_;
  std::string source_;
  std::string name_;
  nlohmann::ordered_json variables_;
};

// data.chat_template's value resolved against the tokenizer file (tokenizer.path; "" for the byte
// tokenizer). nullptr: hftrain's own format. Throws DataError naming the file for a template file
// that is missing, unreadable or does not parse, and ConfigError for an unknown name.
std::shared_ptr<const ChatTemplate> resolve_chat_template(const std::string& choice,
                                                          const std::filesystem::path& tokenizer_file);

}  // namespace hftrain::tokenizer
