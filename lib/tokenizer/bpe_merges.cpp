#include "tokenizer/bpe_merges.h"

#include <algorithm>

namespace hftrain::tokenizer {
namespace {

// Scratch space for words up to this many symbols is kept between calls.
constexpr size_t kKeptScratch = 4096;

struct Symbol {
  int32_t id;
  int32_t prev;  // index of the previous live symbol, -1 at the start
  int32_t next;  // index of the next live symbol, -1 at the end
  bool live;
};

struct Candidate {
  int32_t rank;
  int32_t pos;
  int32_t merged;
  // The heap's top is the lowest rank, then the leftmost position.
  bool operator<(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
};

}  // namespace

BpeMerges::BpeMerges(const std::vector<BpeMerge>& merges) {
  ranks_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const BpeMerge& m = merges[rank];
    ranks_[bpe_pair_key(m.left, m.right)] = {static_cast<int32_t>(rank), m.merged};
  }
}

void BpeMerges::apply(std::vector<int32_t>& ids) const {
  if (ids.size() < 2 || ranks_.empty()) return;
  // Scratch space kept per thread: most words are short, and two allocations per word would
  // cost more than merging them.
  thread_local std::vector<Symbol> symbols;
  thread_local std::vector<Candidate> heap;
  symbols.resize(ids.size());
  heap.clear();
  for (size_t i = 0; i < ids.size(); ++i) {
    const auto pos = static_cast<int32_t>(i);
    symbols[i] = Symbol{ids[i], pos - 1, i + 1 < ids.size() ? pos + 1 : -1, true};
  }
  auto push_pair = [&](int32_t pos) {
    const Symbol& s = symbols[static_cast<size_t>(pos)];
    if (s.next < 0) return;
    auto it = ranks_.find(bpe_pair_key(s.id, symbols[static_cast<size_t>(s.next)].id));
    if (it == ranks_.end()) return;
    heap.push_back(Candidate{it->second.first, pos, it->second.second});
    std::push_heap(heap.begin(), heap.end());
  };
  for (int32_t pos = 0; pos + 1 < static_cast<int32_t>(symbols.size()); ++pos) push_pair(pos);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end());
    const Candidate top = heap.back();
    heap.pop_back();
    Symbol& left = symbols[static_cast<size_t>(top.pos)];
    if (!left.live || left.next < 0) continue;
    Symbol& right = symbols[static_cast<size_t>(left.next)];
    // A stale entry: the pair at this position changed since it was queued (the check
    // `tokenizers` makes, so that both skip the same entries).
    auto it = ranks_.find(bpe_pair_key(left.id, right.id));
    if (it == ranks_.end() || it->second.second != top.merged) continue;
    left.id = top.merged;
    right.live = false;
    left.next = right.next;
    if (right.next >= 0) symbols[static_cast<size_t>(right.next)].prev = top.pos;
    if (left.prev >= 0) push_pair(left.prev);
    push_pair(top.pos);
  }
  size_t n = 0;
  for (const Symbol& s : symbols) {
    if (s.live) ids[n++] = s.id;
  }
  ids.resize(n);
  // A long piece (a whole document, where no pre-tokenizer splits it) does not keep its space.
  if (symbols.capacity() > kKeptScratch) {
    symbols = {};
    heap = {};
  }
}

}  // namespace hftrain::tokenizer
