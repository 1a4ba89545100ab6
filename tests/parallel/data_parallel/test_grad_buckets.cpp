#include <catch2/catch.hpp>

#include <map>

#include "parallel/data_parallel/grad_buckets.h"

using namespace hftrain;

TEST_CASE("buckets: reverse order, capped by bytes, padded to the world size", "[dist]") {
  // Parameters of 10, 7, 3 and 20 floats; 64-byte buckets hold 16 floats.
  const auto buckets = parallel::plan_buckets({10, 7, 3, 20}, 4, 64, 3);
  REQUIRE(buckets.size() == 3);
  CHECK(buckets[0].entries.size() == 1);  // the last parameter first, alone (larger than a bucket)
  CHECK(buckets[0].entries[0].param == 3);
  CHECK(buckets[0].padded_numel == 21);
  CHECK(buckets[1].entries.size() == 2);  // 3 + 7
  CHECK(buckets[1].entries[0].param == 2);
  CHECK(buckets[1].entries[1].offset == 3);
  CHECK(buckets[1].padded_numel == 12);
  CHECK(buckets[2].numel == 10);
  CHECK(buckets[2].padded_numel == 12);
  CHECK(buckets[2].chunk() == 4);
}

TEST_CASE("buckets: the ranks' pieces cover every element exactly once", "[dist]") {
  const std::vector<int64_t> numels = {5, 1, 17, 2, 9, 33};
  for (int world : {1, 2, 3, 4, 7}) {
    for (int64_t cap : {4, 40, 1000}) {
      const auto buckets = parallel::plan_buckets(numels, 4, cap, world);
      std::map<size_t, std::vector<int>> seen;
      for (size_t p = 0; p < numels.size(); ++p) seen[p].assign(static_cast<size_t>(numels[p]), 0);
      for (int r = 0; r < world; ++r) {
        for (const auto& piece : parallel::shard_pieces(buckets, r)) {
          CHECK(piece.chunk_offset + piece.numel <= buckets[piece.bucket].chunk());
          for (int64_t i = 0; i < piece.numel; ++i) ++seen[piece.param][static_cast<size_t>(piece.param_offset + i)];
        }
      }
      for (const auto& [p, counts] : seen) {
        for (int c : counts) CHECK(c == 1);
      }
    }
  }
}
