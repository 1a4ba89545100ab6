// Trains a byte-level BPE tokenizer on text: the 256 byte tokens first (id = byte value), then
// one token per merge, then the special tokens. Pieces come from the GPT-2 pre-tokenizer, so no
// merge crosses a word boundary. Deterministic: the most frequent pair wins, ties go to the
// smallest (left id, right id).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/bpe_tokenizer.h"

namespace hftrain::tokenizer {

struct BpeTrainerOptions {
  int32_t vocab_size = 8192;   // bytes + merges + specials
  int64_t min_frequency = 2;   // a pair seen fewer times is never merged
  std::vector<std::string> special_tokens = {kEndOfTextToken, kPadToken};
};

class BpeTrainer {
 public:
  explicit BpeTrainer(BpeTrainerOptions options);
  // Counts the pieces of `text`.
  void add_text(std::string_view text);
  // (data/tokenizer_training.h feeds it every document of a run's sources.)
  // Runs the merges. Throws ConfigError when vocab_size cannot hold the bytes and the specials.
  BpeTokenizer train() const;

 private:
  BpeTrainerOptions options_;
  std::unordered_map<std::string, int64_t> piece_counts_;
};

}  // namespace hftrain::tokenizer
