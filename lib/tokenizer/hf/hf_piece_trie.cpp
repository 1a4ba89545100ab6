#include "tokenizer/hf/hf_piece_trie.h"

#include <algorithm>
#include <numeric>

namespace hftrain::tokenizer::hf {

PieceTrie::PieceTrie(const std::vector<std::string>& pieces) {
  // Inserting the pieces in sorted order creates each node's children in byte order; `path` holds
  // the nodes along the previous piece.
  std::vector<int32_t> order(pieces.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return pieces[a] < pieces[b]; });
  struct Edge {
    uint32_t parent;
    uint8_t byte;
  };
  std::vector<Edge> edges;  // edges[n - 1] leads to node n
  id_.push_back(-1);
  std::vector<uint32_t> path{0};
  const std::string* previous = nullptr;
  for (int32_t id : order) {
    const std::string& piece = pieces[static_cast<size_t>(id)];
    if (piece.empty()) continue;
    size_t shared = 0;
    if (previous) {
      const size_t n = std::min(previous->size(), piece.size());
      while (shared < n && (*previous)[shared] == piece[shared]) ++shared;
    }
    path.resize(shared + 1);
    for (size_t i = shared; i < piece.size(); ++i) {
      edges.push_back({path.back(), static_cast<uint8_t>(piece[i])});
      path.push_back(static_cast<uint32_t>(id_.size()));
      id_.push_back(-1);
    }
    id_[path.back()] = id;  // equal pieces: the later id, as sorted stably
    previous = &piece;
  }
  // Group the edges by parent (a counting sort keeps each node's children in byte order).
  first_edge_.assign(id_.size() + 1, 0);
  for (const Edge& e : edges) ++first_edge_[e.parent + 1];
  std::partial_sum(first_edge_.begin(), first_edge_.end(), first_edge_.begin());
  edge_byte_.resize(edges.size());
  edge_child_.resize(edges.size());
  std::vector<uint32_t> next(first_edge_.begin(), first_edge_.end() - 1);
  for (size_t n = 0; n < edges.size(); ++n) {
    const uint32_t slot = next[edges[n].parent]++;
    edge_byte_[slot] = edges[n].byte;
    edge_child_[slot] = static_cast<uint32_t>(n + 1);
  }
}

uint32_t PieceTrie::child(uint32_t node, uint8_t byte) const {
  const auto begin = edge_byte_.begin() + first_edge_[node];
  const auto end = edge_byte_.begin() + first_edge_[node + 1];
  const auto it = std::lower_bound(begin, end, byte);
  if (it == end || *it != byte) return kNone;
  return edge_child_[static_cast<size_t>(it - edge_byte_.begin())];
}

}  // namespace hftrain::tokenizer::hf
