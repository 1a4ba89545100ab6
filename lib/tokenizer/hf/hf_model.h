// The models of Hugging Face tokenizer.json files: what turns one pre-tokenized piece into ids.
// BPE (merges, unk_token, fuse_unk, byte_fallback, continuing_subword_prefix,
// end_of_word_suffix, ignore_merges; hf_bpe.h), WordPiece and WordLevel (hf_wordpiece.h), Unigram
// (scores, unk_id, byte_fallback; hf_unigram.h).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "tokenizer/hf/hf_json.h"

namespace hftrain::tokenizer::hf {

// A model's vocabulary: token <-> id, ids possibly with gaps.
struct Vocab {
  std::unordered_map<std::string, int32_t> ids;
  std::vector<std::string> tokens;  // by id
  std::vector<bool> present;        // by id: false for a gap

  std::optional<int32_t> find(const std::string& token) const {
    auto it = ids.find(token);
    if (it == ids.end()) return std::nullopt;
    return it->second;
  }
};

// Ids above this are refused: no real vocabulary comes near (the largest have about a million
// tokens), and a table that large from a damaged file would only waste memory.
inline constexpr int64_t kMaxTokenId = (int64_t{1} << 22) - 1;

// Reads {"token": id, ...}; fails for negative or huge ids and two tokens sharing an id.
Vocab parse_vocab(const Json& obj, const Where& where);

class Model {
 public:
  virtual ~Model() = default;
  // Appends the ids of one pre-tokenized piece (not empty).
  virtual void tokenize(const std::string& piece, std::vector<int32_t>& out) const = 0;
  virtual const Vocab& vocab() const = 0;
  // A short description for fingerprints and messages ("BPE", "WordPiece", "Unigram").
  virtual std::string kind() const = 0;
};

// The model a tokenizer.json "model" value describes. Throws DataError naming the JSON path for
// an unknown type or unsupported option (BPE dropout), a merge naming a token the vocabulary
// lacks, an unk_token missing from the vocabulary, or a Unigram piece without a number for its
// score or an unk_id past its vocabulary.
std::unique_ptr<Model> parse_model(const Json& json, const Where& where);

}  // namespace hftrain::tokenizer::hf
