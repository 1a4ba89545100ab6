// A bounded cache of the ids of pre-tokenized pieces, shared by both BPE tokenizers: pieces repeat
// (words), and looking their ids up makes encoding several times faster. Safe to use from several
// threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace hftrain::tokenizer {

class BpePieceCache {
 public:
  // Appends the ids of `piece` to `out`: the cached ones, or those encode(ids) puts into an empty
  // vector, which are then cached.
  template <class Encode>
  void append(std::string_view piece, std::vector<int32_t>& out, Encode&& encode) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (auto it = ids_.find(std::string(piece)); it != ids_.end()) {
        out.insert(out.end(), it->second.begin(), it->second.end());
        return;
      }
    }
    std::vector<int32_t> ids;
    encode(ids);
    out.insert(out.end(), ids.begin(), ids.end());
    // Longer pieces are not cached: without a pre-tokenizer (Llama-2, Mistral) a piece is a whole
    // document, which would only fill the cache (tokenizers' BPE cache has a length limit too).
    if (piece.size() > kMaxPieceBytes) return;
    std::lock_guard<std::mutex> lock(mutex_);
    if (ids_.size() >= kMaxPieces) ids_.clear();
    ids_.emplace(std::string(piece), std::move(ids));
  }

 private:
  static constexpr size_t kMaxPieces = size_t{1} << 17;
  static constexpr size_t kMaxPieceBytes = 256;

  std::mutex mutex_;
  std::unordered_map<std::string, std::vector<int32_t>> ids_;
};

}  // namespace hftrain::tokenizer
