// Byte-level BPE (GPT-2 style), the model Hugging Face tokenizers calls ByteLevel + BPE: text is
// split by the GPT-2 pattern, each piece's UTF-8 bytes start as byte tokens, and the merges are
// applied lowest rank first (leftmost on ties; bpe_merges.h, shared with hf::Bpe), exactly as
// `tokenizers` does, so ids match. Special (added) tokens sit outside the merges.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tokenizer/bpe_merges.h"
#include "tokenizer/bpe_piece_cache.h"
#include "tokenizer/regex_split.h"
#include "tokenizer/tokenizer.h"

namespace hftrain::tokenizer {

struct BpeModel {
  // id -> the token's raw bytes (not the byte-level characters of tokenizer.json). Ids without a
  // token (gaps in a foreign vocabulary) are empty.
  std::vector<std::string> vocab;
  // Merges in rank order, as the ids of the left and right token and of the token they make.
  std::vector<BpeMerge> merges;
  // Added tokens: id and content (written in added_tokens with special = true).
  std::vector<std::pair<int32_t, std::string>> specials;
  bool ignore_merges = false;     // a piece found whole in the vocabulary is one token
  bool add_prefix_space = false;  // ByteLevel pre-tokenizer option: prepend " " to the text
  bool byte_level_split = true;   // ByteLevel's use_regex: split by the GPT-2 pattern
  // A Split pre-tokenizer before ByteLevel (Llama-3, Qwen2): its regex, "Isolated"; empty: none.
  std::string split_regex;
  // Where split_regex was read (the file and the JSON path), for the messages of a regex that
  // gives up on a text; empty: "tokenizer".
  std::string split_regex_source;
  // The end-of-text and padding tokens (contents of specials); empty: <|endoftext|>, and <|pad|>
  // or else the end-of-text token.
  std::string eos_token;
  std::string pad_token;
  // What the post-processor puts before and after a sequence (Llama-3: <|begin_of_text|>).
  std::vector<int32_t> post_prefix;
  std::vector<int32_t> post_suffix;
};

class BpeTokenizer : public Tokenizer {
 public:
  // Throws DataError when a merge or the post-processor names an id outside the vocabulary, or the
  // end-of-text token is missing from it (eos_token, or <|endoftext|> when that is empty; the pad
  // token falls back to it). A tokenizer.json's vocabulary and merges are checked before, with
  // messages naming the file (hf_bpe_tables.h).
  explicit BpeTokenizer(BpeModel model);

  std::vector<int32_t> encode(std::string_view text, bool allow_special = false) const override;
  std::vector<int32_t> encode_with_special_tokens(std::string_view text) const override;
  std::string decode(std::span<const int32_t> ids) const override;
  std::string decode_without_special(std::span<const int32_t> ids) const override;
  int32_t vocab_size() const override { return static_cast<int32_t>(model_.vocab.size()); }
  int32_t eot_id() const override { return eot_id_; }
  int32_t pad_id() const override { return pad_id_; }
  std::optional<int32_t> special_id(std::string_view content) const override;
  std::string fingerprint() const override { return fingerprint_; }
  const BpeModel& model() const { return model_; }

 private:
  void encode_piece(std::string_view piece, std::vector<int32_t>& out) const;
  void encode_plain(std::string_view text, std::vector<int32_t>& out) const;
  std::optional<int32_t> token_id(const std::string& content) const;  // a special or a model token
  void check_id(int32_t id, const char* what) const;

  BpeModel model_;
  std::unordered_map<std::string, int32_t> token_to_id_;  // raw bytes -> id (model tokens)
  BpeMerges merges_;
  int32_t byte_ids_[256];  // -1: the byte is not in the vocabulary (skipped, as tokenizers does)
  int32_t eot_id_ = -1;
  int32_t pad_id_ = -1;
  std::string fingerprint_;
  std::shared_ptr<const RegexSplitter> splitter_;  // when model_.split_regex is set
  mutable BpePieceCache cache_;
};

}  // namespace hftrain::tokenizer
