// A byte trie over a Unigram vocabulary: for a position of a text, every piece that starts there,
// shortest first (the lattice of hf_unigram.h). Stored flat (children of a node sorted by byte),
// so that a 250,000-piece vocabulary costs a few megabytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hftrain::tokenizer::hf {

class PieceTrie {
 public:
  // pieces[id]; an empty piece is never found, and of equal pieces the last id is found (as
  // `tokenizers` maps a token to its last id).
  explicit PieceTrie(const std::vector<std::string>& pieces);

  // Calls fn(length, id) for each piece that is a prefix of `text`, shortest first.
  template <class Fn>
  void prefixes(std::string_view text, Fn&& fn) const {
    uint32_t node = 0;
    for (size_t i = 0; i < text.size(); ++i) {
      node = child(node, static_cast<uint8_t>(text[i]));
      if (node == kNone) return;
      if (id_[node] >= 0) fn(i + 1, id_[node]);
    }
  }

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  uint32_t child(uint32_t node, uint8_t byte) const;

  std::vector<int32_t> id_;           // by node: the piece ending there, or -1
  std::vector<uint32_t> first_edge_;  // by node: its edges are [first_edge_[n], first_edge_[n+1])
  std::vector<uint8_t> edge_byte_;    // by edge, sorted within a node
  std::vector<uint32_t> edge_child_;  // by edge
};

}  // namespace hftrain::tokenizer::hf
