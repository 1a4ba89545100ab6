// The merge step of BPE, shared by the byte-level BpeTokenizer and the general hf::Bpe model: a
// word's symbols are joined pair by pair, the pair with the lowest merge rank first and the
// leftmost on ties, exactly as `tokenizers` joins them, so that both give its ids.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

namespace hftrain::tokenizer {

// The pair (left, right) as one hash key.
inline uint64_t bpe_pair_key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

// One merge: the tokens `left` and `right`, next to each other, become `merged`.
struct BpeMerge {
  int32_t left;
  int32_t right;
  int32_t merged;
};

class BpeMerges {
 public:
  BpeMerges() = default;
  // `merges` in rank order. A pair listed twice keeps its last rank, as `tokenizers`' map does.
  explicit BpeMerges(const std::vector<BpeMerge>& merges);

  // Joins `symbols` (token ids) in place. A heap of candidate pairs over a linked list of the
  // symbols makes this O(n log n) in the word's length: long runs of one character (a line of
  // "=" or a base64 blob) stay cheap, where rescanning the word after every merge is quadratic.
  void apply(std::vector<int32_t>& symbols) const;

  // The number of distinct pairs (fewer than the merges given when some pair repeats).
  size_t size() const { return ranks_.size(); }

 private:
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>>
      ranks_;  // (left, right) -> (rank, merged)
};

}  // namespace hftrain::tokenizer
