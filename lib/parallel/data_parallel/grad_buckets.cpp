#include "parallel/data_parallel/grad_buckets.h"

#include <algorithm>

namespace hftrain::parallel {

void Bucket::append(size_t param, int64_t count) {
  const int64_t offset = (numel + align - 1) / align * align;
  entries.push_back({param, offset, count});
  numel = offset + count;
}

void Bucket::pad() {
  const int64_t unit = static_cast<int64_t>(world_size) * align;
  padded_numel = (numel + unit - 1) / unit * unit;
}

std::vector<Bucket> plan_buckets(const std::vector<int64_t>& numels, int64_t element_bytes, int64_t bucket_bytes,
                                 int world_size, int64_t align) {
  const int64_t cap = std::max<int64_t>(1, bucket_bytes / std::max<int64_t>(1, element_bytes));
  std::vector<Bucket> buckets;
  Bucket empty;
  empty.world_size = world_size;
  empty.align = align;
  Bucket current = empty;
  for (size_t i = numels.size(); i-- > 0;) {
    if (!current.entries.empty() && current.numel + numels[i] > cap) {
      buckets.push_back(current);
      current = empty;
    }
    current.append(i, numels[i]);
  }
  if (!current.entries.empty()) buckets.push_back(current);
  for (auto& b : buckets) b.pad();
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
