// Data sources: where documents come from and how a file is cut into documents. A source names
// files (a path, a folder or a glob), minus exclude patterns, and a format. Text and JSONL
// sources yield Documents; token shards (pre-tokenized binary) are read by token_shard.h instead.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace hftrain::tokenizer {
class ChatTemplate;
}

namespace hftrain::data {

enum class SourceFormat {
  kAuto,    // by extension: .jsonl/.json -> kJsonl, .bin -> kTokens, anything else -> kText
  kText,    // plain UTF-8 text: one document per file, or split at separator lines
  kJsonl,   // one JSON object per line; the document is the string field `text_field`
  kChat,    // one JSON object per line: prompt/response fields or a list of role/content messages
  kTokens,  // pre-tokenized binary shard (see token_shard.h)
};

enum class TokenDtype { kUint16, kUint32 };

struct SourceSpec {
  // A file, a folder (every regular file below it) or a glob ("data/*.txt", "/usr/share/games/fortunes/*").
  std::string path{};
  // What metrics and evaluation call the source (data.train's `name`); "": made from the path
  // (source_name).
  std::string name{};
  // A weighted mixture's share of the samples (data.train's `weight`); unset: not a mixture.
  std::optional<double> weight{};
  // Glob patterns (fnmatch) checked against each file's name and full path; matches are skipped.
  // Example for fortune folders: {"*.dat", "*.u8"} (binary indexes and symlinked copies).
  std::vector<std::string> exclude{};
  SourceFormat format = SourceFormat::kAuto;
  // kText: a line equal to this (after trimming trailing spaces) ends a document; "" = one
  // document per file. Fortune files use "%".
  std::string separator{};
  std::string text_field = "text";          // kJsonl
  std::string prompt_field = "prompt";      // kChat, prompt/response form
  std::string response_field = "response";  // kChat, prompt/response form
  std::string messages_field = "messages";  // kChat, messages form: [{"role": .., "content": ..}]
  TokenDtype dtype = TokenDtype::kUint16;   // kTokens without an llm.c header
};

// A run of text that either carries loss (train = true) or is context only (a prompt).
struct Segment {
  std::string text;
  bool train = true;
};

// One document and where it came from ("file:line"), for error messages.
struct Document {
  std::vector<Segment> segments;
  std::string origin;
  // A chat template's output: special-token text in it (<|im_start|>) encodes as the special token,
  // as transformers tokenizes apply_chat_template's text. Otherwise it stays text, so that data
  // cannot inject control tokens.
  bool special_tokens = false;
};

// Chat rendering. A message becomes role_prefix + role + role_suffix + content + message_end;
// only the content and message_end of `train_role` messages carry loss.
struct ChatTemplate {
  // The model's own template (data.chat_template): when set, chat records are rendered through it
  // (data/chat_render.h) and the fields below are not used.
  std::shared_ptr<const tokenizer::ChatTemplate> model_template;
  std::string role_prefix = "<|";
  std::string role_suffix = "|>\n";
  std::string message_end = "\n";
  std::string train_role = "assistant";
};

// The format a file is read with (kAuto resolved by its extension).
SourceFormat resolve_format(const SourceSpec& spec, const std::filesystem::path& file);

// The source's name: `name` when set, else its path's last component without wildcards and
// extension ("data/chat.jsonl" -> "chat", "web/*.txt" -> "web", "shards/" -> "shards").
std::string source_name(const SourceSpec& spec);

// Whether every file of `sources` holds records that stand alone as documents (JSONL or chat):
// the default of document masking (data.document_mask). Throws as expand_source does.
bool records_only(const std::vector<SourceSpec>& sources);

// The files a source names, sorted, excludes applied. Throws DataError when the path does not
// exist or nothing is left (naming the pattern and the excludes).
std::vector<std::filesystem::path> expand_source(const SourceSpec& spec);

// Reads one text/JSONL/chat file and passes each document to `sink`. Throws DataError naming the
// file and line for: an empty file, binary data, invalid UTF-8, malformed JSON, a missing or
// non-string field.
void read_documents(const SourceSpec& spec, const std::filesystem::path& file,
                    const ChatTemplate& chat, const std::function<void(Document&&)>& sink);

}  // namespace hftrain::data
