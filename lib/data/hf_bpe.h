// The BPE model of tokenizer.json in full: a piece's characters (with continuing_subword_prefix
// and end_of_word_suffix where set) become tokens, characters missing from the vocabulary become
// their UTF-8 bytes as <0xXX> tokens (byte_fallback) or the unk token (fused when fuse_unk), and
// merges apply lowest rank first, leftmost on ties, as `tokenizers` applies them.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "data/hf_model.h"

namespace hftrain::data::hf {

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
  // merges: the left and right token of each merge, in rank order. Throws DataError (via
  // `where`) for a merge whose parts or result are not in the vocabulary, or an unk token that is
  // not.
  Bpe(Vocab vocab, const std::vector<std::pair<std::string, std::string>>& merges,
      BpeOptions options, const Where& where);

  void tokenize(const std::string& piece, std::vector<int32_t>& out) const override;
  const Vocab& vocab() const override { return vocab_; }
  std::string kind() const override { return "BPE"; }

 private:
  void merge_word(const std::string& piece, std::vector<int32_t>& out) const;

  Vocab vocab_;
  BpeOptions options_;
  std::optional<int32_t> unk_id_;
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>>
      merges_;             // (left, right) -> (rank, new id)
  int32_t byte_ids_[256];  // <0xXX> tokens for byte_fallback; -1 where missing
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache_;
};

std::unique_ptr<Model> parse_bpe(const Json& json, const Where& where);

}  // namespace hftrain::data::hf
