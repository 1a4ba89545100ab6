#include "parallel/data_parallel/grad_buckets.h"

#include <algorithm>

namespace hftrain::parallel {

std::vector<Bucket> plan_buckets(const std::vector<int64_t>& numels, int64_t element_bytes, int64_t bucket_bytes,
                                 int world_size) {
  const int64_t cap = std::max<int64_t>(1, bucket_bytes / std::max<int64_t>(1, element_bytes));
  std::vector<Bucket> buckets;
  Bucket current;
  current.world_size = world_size;
  for (size_t i = numels.size(); i-- > 0;) {
    if (!current.entries.empty() && current.numel + numels[i] > cap) {
      buckets.push_back(current);
      current = Bucket{};
      current.world_size = world_size;
    }
    current.entries.push_back({i, current.numel, numels[i]});
    current.numel += numels[i];
  }
  if (!current.entries.empty()) buckets.push_back(current);
  for (auto& b : buckets) b.padded_numel = (b.numel + world_size - 1) / world_size * world_size;
  return buckets;
}

std::vector<ShardPiece> shard_pieces(const std::vector<Bucket>& buckets, int rank) {
  std::vector<ShardPiece> pieces;
  for (size_t b = 0; b < buckets.size(); ++b) {
    const int64_t lo = rank * buckets[b].chunk(), hi = lo + buckets[b].chunk();
    for (const auto& e : buckets[b].entries) {
      const int64_t start = std::max(lo, e.offset), end = std::min(hi, e.offset + e.numel);
      if (start >= end) continue;
      pieces.push_back({b, e.param, start - e.offset, start - lo, end - start});
    }
  }
  return pieces;
}

}  // namespace hftrain::parallel
