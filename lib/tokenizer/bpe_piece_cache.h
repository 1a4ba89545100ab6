// A bounded cache of the ids of pre-tokenized pieces, shared by both BPE tokenizers: pieces repeat
// (words), and looking their ids up makes encoding several times faster. Safe to use from several
// threads: the pieces are spread over shards by their hash, each with its own lock, so that the
// token-cache build's workers rarely wait on each other; a lookup allocates nothing.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
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
    const size_t hash = Hash{}(piece);
    Shard& shard = shards_[(hash >> 7) % kShards];
    {
      std::lock_guard<std::mutex> lock(shard.mutex);
      if (auto it = shard.ids.find(piece); it != shard.ids.end()) {
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
    std::lock_guard<std::mutex> lock(shard.mutex);
    if (shard.ids.size() >= kMaxPieces / kShards) shard.ids.clear();
    shard.ids.emplace(std::string(piece), std::move(ids));
  }

 private:
  static constexpr size_t kMaxPieces = size_t{1} << 17;
  static constexpr size_t kMaxPieceBytes = 256;
  static constexpr size_t kShards = 64;

  // Transparent: find() takes the string_view without making a std::string.
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  struct Shard {
    std::mutex mutex;
    std::unordered_map<std::string, std::vector<int32_t>, Hash, std::equal_to<>> ids;
  };
  std::array<Shard, kShards> shards_;
};

}  // namespace hftrain::tokenizer
