// The BPE model of tokenizer.json in full: a piece's characters (with continuing_subword_prefix
// and end_of_word_suffix where set) become tokens, characters missing from the vocabulary become
// their UTF-8 bytes as <0xXX> tokens (byte_fallback) or the unk token (fused when fuse_unk), and
// merges apply lowest rank first, leftmost on ties, as `tokenizers` applies them (bpe_merges.h).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tokenizer/bpe_merges.h"
#include "tokenizer/bpe_piece_cache.h"
#include "tokenizer/hf/hf_bpe_tables.h"
#include "tokenizer/hf/hf_model.h"

namespace hftrain::tokenizer::hf {

struct BpeOptions {
  std::optional<std::string> unk_token;
  bool fuse_unk = false;
  bool byte_fallback = false;
  std::string continuing_subword_prefix;
  std::string end_of_word_suffix;
  bool ignore_merges = false;
};

class Bpe : public Model {
 public:
  // The vocabulary and merges as parse_bpe_tables read them. Throws DataError (via `where`) for
  // an unk token that is not in the vocabulary.
  Bpe(BpeTables tables, BpeOptions options, const Where& where);

  void tokenize(const std::string& piece, std::vector<int32_t>& out) const override;
  const Vocab& vocab() const override { return vocab_; }
  std::string kind() const override { return "BPE"; }

 private:
  // Fills the empty `symbols` with the piece's ids.
  void merge_word(const std::string& piece, std::vector<int32_t>& symbols) const;

  Vocab vocab_;
  BpeOptions options_;
  std::optional<int32_t> unk_id_;
  BpeMerges merges_;
  int32_t byte_ids_[256];  // <0xXX> tokens for byte_fallback; -1 where missing
  mutable BpePieceCache cache_;
};

std::unique_ptr<Model> parse_bpe(const Json& json, const Where& where);

}  // namespace hftrain::tokenizer::hf
