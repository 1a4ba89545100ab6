// The added tokens of a tokenizer.json ("added_tokens"): special and ordinary tokens cut out of
// the text before the model sees it, with the lstrip / rstrip / single_word / normalized
// options. As in `tokenizers`, tokens with normalized = false are found in the raw text first,
// the rest in each remaining segment after normalization; matches are leftmost-longest.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/hf/hf_json.h"
#include "tokenizer/hf/hf_model.h"
#include "tokenizer/hf/hf_normalizer.h"

namespace hftrain::tokenizer::hf {

struct AddedToken {
  int32_t id = -1;
  std::string content;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = true;
  bool special = false;
};

// A piece of text: an added token (id >= 0) or text for the model (id < 0).
struct Segment {
  size_t begin;
  size_t end;
  int32_t id;
};

class AddedVocabulary {
 public:
  // Ids are assigned as `tokenizers` assigns them when it loads a file: the model's id for a token
  // the model has, else the next id after the model's vocabulary and the added tokens so far
  // (normally the file's own ids).
  AddedVocabulary(const std::vector<AddedToken>& tokens, const Vocab& model_vocab,
                  const Normalizer* normalizer);

  // Splits `text` at the added tokens (of the raw set, or the normalized set) into segments that
  // cover it in order. With allow_special false, special tokens are not looked for (their text
  // is encoded as text), as `tokenizers` does with encode_special_tokens.
  std::vector<Segment> split(std::string_view text, bool normalized_set, bool allow_special) const;

  const AddedToken* by_id(int32_t id) const;
  std::optional<int32_t> id_of(const std::string& content) const;
  const std::vector<AddedToken>& tokens() const { return tokens_; }  // by id
  bool empty() const { return tokens_.empty(); }

 private:
  struct Trie {
    // (node << 8 | byte) -> child; node 0 is the root.
    std::unordered_map<uint64_t, uint32_t> edges;
    std::vector<int32_t> terminal{-1};  // per node: index into tokens_, or -1
    void add(const std::string& pattern, int32_t token);
  };
  // The longest token of `trie` at `pos` (its index and length), honouring allow_special.
  std::optional<std::pair<int32_t, size_t>> longest_at(const Trie& trie, std::string_view text,
                                                       size_t pos, bool allow_special) const;

  std::vector<AddedToken> tokens_;  // sorted by id
  std::unordered_map<int32_t, size_t> index_by_id_;
  std::unordered_map<std::string, int32_t> id_by_content_;
  Trie raw_;
  Trie normalized_;
};

// Reads "added_tokens" (an array of {id, content, single_word, lstrip, rstrip, normalized,
// special}); null or absent is none.
std::vector<AddedToken> parse_added_tokens(const Json* json, const Where& where);

}  // namespace hftrain::tokenizer::hf
