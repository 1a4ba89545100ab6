// The sampler: a permutation per epoch that is a pure function of (seed, epoch), every sample
// exactly once per epoch, and O(1) positioning by cursor.
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <set>

#include "data/sampler.h"

using namespace hftrain::data;

TEST_CASE("Permutation is a bijection of 0..n-1 for many n", "[data][sampler]") {
  for (uint64_t n : {1, 2, 3, 4, 5, 7, 16, 17, 100, 255, 256, 257, 1000, 4097}) {
    for (uint64_t key : {0ull, 1ull, 0xDEADBEEFull}) {
      Permutation p(n, key);
      std::vector<uint64_t> seen(n, 0);
      for (uint64_t i = 0; i < n; ++i) {
        uint64_t v = p(i);
        REQUIRE(v < n);
        ++seen[v];
      }
      CHECK(std::all_of(seen.begin(), seen.end(), [](uint64_t c) { return c == 1; }));
    }
  }
}

TEST_CASE("every sample exactly once per epoch, in a new order each epoch", "[data][sampler]") {
  const uint64_t n = 1000;
  Sampler sampler(n, SamplerOptions{.seed = 42});
  std::vector<std::vector<uint64_t>> orders;
  for (uint64_t epoch = 0; epoch < 3; ++epoch) {
    std::vector<uint64_t> order;
    for (uint64_t i = 0; i < n; ++i) order.push_back(sampler.sample_at(epoch * n + i));
    std::vector<uint64_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    std::vector<uint64_t> expected(n);
    std::iota(expected.begin(), expected.end(), 0);
    CHECK(sorted == expected);
    orders.push_back(order);
  }
  CHECK(orders[0] != orders[1]);
  CHECK(orders[1] != orders[2]);
  std::vector<uint64_t> identity(n);
  std::iota(identity.begin(), identity.end(), 0);
  CHECK(orders[0] != identity);
}

TEST_CASE("the order is a pure function of (seed, epoch)", "[data][sampler]") {
  Sampler a(500, SamplerOptions{.seed = 7});
  Sampler b(500, SamplerOptions{.seed = 7});
  Sampler c(500, SamplerOptions{.seed = 8});
  int differ = 0;
  for (uint64_t cursor = 0; cursor < 1500; ++cursor) {
    CHECK(a.sample_at(cursor) == b.sample_at(cursor));
    differ += a.sample_at(cursor) != c.sample_at(cursor);
  }
  CHECK(differ > 1000);
}

TEST_CASE("seeking is O(1): any cursor, even far in the future, without replay", "[data][sampler]") {
  const uint64_t n = 1'000'003;
  Sampler sampler(n, SamplerOptions{.seed = 3});
  // Epoch 1'000'000 is reached directly; the same position always gives the same sample.
  const uint64_t far = n * 1'000'000ull + 12345;
  CHECK(sampler.epoch_of(far) == 1'000'000);
  const uint64_t v = sampler.sample_at(far);
  CHECK(v < n);
  CHECK(Sampler(n, SamplerOptions{.seed = 3}).sample_at(far) == v);
  // A run resumed at a cursor continues with exactly the samples the uninterrupted run serves.
  std::vector<uint64_t> straight;
  for (uint64_t cursor = n - 50; cursor < n + 50; ++cursor) straight.push_back(sampler.sample_at(cursor));
  Sampler resumed(n, SamplerOptions{.seed = 3});
  for (uint64_t k = 0; k < 100; ++k) CHECK(resumed.sample_at(n - 50 + k) == straight[k]);
}

TEST_CASE("without shuffling the order is the corpus order every epoch", "[data][sampler]") {
  Sampler sampler(10, SamplerOptions{.seed = 1, .shuffle = false});
  for (uint64_t cursor = 0; cursor < 30; ++cursor) CHECK(sampler.sample_at(cursor) == cursor % 10);
  CHECK(sampler.epoch_of(29) == 2);
}
