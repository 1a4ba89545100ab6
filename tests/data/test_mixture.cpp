// The mixture sampler: weighted proportions that are exact in the long run, each source's samples
// once per its own epoch, everything a pure function of (seed, cursor), and random access at any
// cursor agreeing with walking there.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <numeric>
#include <stdexcept>
#include <utility>
#include <vector>

#include "data/mixture.h"

using namespace hftrain::data;

namespace {

constexpr uint64_t K = MixtureSampler::kBlock;

// Per source, the draws of cursors [0, end) counted one by one.
std::vector<uint64_t> count_draws(const MixtureSampler& mixture, uint64_t end) {
  std::vector<uint64_t> counts(mixture.num_sources(), 0);
  for (uint64_t cursor = 0; cursor < end; ++cursor) ++counts[mixture.draw_at(cursor).source];
  return counts;
}

std::vector<uint64_t> iota(uint64_t n) {
  std::vector<uint64_t> values(n);
  std::iota(values.begin(), values.end(), 0);
  return values;
}

MixtureSampler three_sources(SamplerOptions options) {
  return MixtureSampler({{37, 1.0}, {100, 2.0}, {1000, 0.5}}, options);
}

}  // namespace

TEST_CASE("mixture: proportions follow the weights", "[data][mixture]") {
  MixtureSampler mixture({{1000, 0.7}, {500, 0.2}, {300, 0.1}}, SamplerOptions{.seed = 1});
  const uint64_t n = 100000;
  const std::vector<uint64_t> counts = count_draws(mixture, n);
  // Within one draw at block boundaries; the partial block at the end adds its shuffle noise.
  CHECK(std::abs(double(counts[0]) - 0.7 * n) < 100);
  CHECK(std::abs(double(counts[1]) - 0.2 * n) < 100);
  CHECK(std::abs(double(counts[2]) - 0.1 * n) < 100);
  const std::vector<uint64_t> at_block = mixture.draws_before(24 * K);
  CHECK(std::abs(double(at_block[0]) - 0.7 * 24 * K) <= 2);
  CHECK(std::abs(double(at_block[1]) - 0.2 * 24 * K) <= 2);
  CHECK(std::abs(double(at_block[2]) - 0.1 * 24 * K) <= 2);
}

TEST_CASE("mixture: a tiny weight still gets its share of draws", "[data][mixture]") {
  MixtureSampler mixture({{1000, 1.0}, {10, 1e-4}}, SamplerOptions{.seed = 2});
  const std::vector<uint64_t> counts = count_draws(mixture, 100000);
  CHECK(counts[1] >= 8);  // about 10
  CHECK(counts[1] <= 12);
  // Far below 2^-32 the weight is floored to one quantum: rare, but never starved.
  MixtureSampler tinier({{1000, 1.0}, {10, 1e-15}}, SamplerOptions{.seed = 2});
  const std::vector<uint64_t> far = tinier.draws_before(uint64_t{1} << 34);
  CHECK(far[1] >= 3);
  CHECK(far[1] <= 4);
}

TEST_CASE("mixture: sample_at is the source's offset plus the sample", "[data][mixture]") {
  MixtureSampler mixture = three_sources(SamplerOptions{.seed = 3});
  CHECK(mixture.num_sources() == 3);
  CHECK(mixture.num_samples() == 1137);
  CHECK(mixture.offset(0) == 0);
  CHECK(mixture.offset(1) == 37);
  CHECK(mixture.offset(2) == 137);
  CHECK(mixture.epoch_of(1136) == 0);
  CHECK(mixture.epoch_of(1137) == 1);
  for (uint64_t cursor = 0; cursor < 5000; ++cursor) {
    const MixtureSampler::Draw draw = mixture.draw_at(cursor);
    CHECK(mixture.sample_at(cursor) == mixture.offset(draw.source) + draw.sample);
  }
}

TEST_CASE("mixture: each source's epoch is a permutation, reshuffled per epoch", "[data][mixture]") {
  MixtureSampler mixture = three_sources(SamplerOptions{.seed = 4});
  // Per (source, source epoch): the samples in draw order.
  std::map<std::pair<size_t, uint64_t>, std::vector<uint64_t>> epochs;
  for (uint64_t cursor = 0; cursor < 20000; ++cursor) {
    const MixtureSampler::Draw draw = mixture.draw_at(cursor);
    const uint64_t n = draw.source == 0 ? 37 : draw.source == 1 ? 100 : 1000;
    REQUIRE(draw.sample < n);
    REQUIRE(draw.source_epoch == draw.draw / n);
    epochs[{draw.source, draw.source_epoch}].push_back(draw.sample);
  }
  size_t complete = 0;
  for (const auto& [key, order] : epochs) {
    const uint64_t n = key.first == 0 ? 37 : key.first == 1 ? 100 : 1000;
    if (order.size() < n) continue;  // the last, partial epoch
    ++complete;
    std::vector<uint64_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    CHECK(sorted == iota(n));
  }
  CHECK(complete > 100);
  for (size_t source = 0; source < 3; ++source) {
    const std::vector<uint64_t>& first = epochs.at({source, 0});
    const std::vector<uint64_t>& second = epochs.at({source, 1});
    CHECK(first != second);
    CHECK(first != iota(first.size()));
  }
}

TEST_CASE("mixture: deterministic from the seed, and seeds differ", "[data][mixture]") {
  MixtureSampler a = three_sources(SamplerOptions{.seed = 7});
  MixtureSampler b = three_sources(SamplerOptions{.seed = 7});
  MixtureSampler c = three_sources(SamplerOptions{.seed = 8});
  int differ = 0;
  for (uint64_t cursor = 0; cursor < 5000; ++cursor) {
    const MixtureSampler::Draw x = a.draw_at(cursor);
    const MixtureSampler::Draw y = b.draw_at(cursor);
    CHECK(x.source == y.source);
    CHECK(x.sample == y.sample);
    CHECK(x.draw == y.draw);
    CHECK(x.source_epoch == y.source_epoch);
    differ += a.sample_at(cursor) != c.sample_at(cursor);
  }
  CHECK(differ > 4000);
}

TEST_CASE("mixture: without shuffle each source is drawn in order", "[data][mixture]") {
  MixtureSampler mixture = three_sources(SamplerOptions{.seed = 5, .shuffle = false});
  std::vector<uint64_t> next(3, 0);
  for (uint64_t cursor = 0; cursor < 20000; ++cursor) {
    const MixtureSampler::Draw draw = mixture.draw_at(cursor);
    const uint64_t n = draw.source == 0 ? 37 : draw.source == 1 ? 100 : 1000;
    REQUIRE(draw.draw == next[draw.source]);
    REQUIRE(draw.sample == draw.draw % n);
    ++next[draw.source];
  }
  // And the seed does not matter then.
  MixtureSampler other = three_sources(SamplerOptions{.seed = 6, .shuffle = false});
  for (uint64_t cursor = 0; cursor < 2000; ++cursor)
    CHECK(other.sample_at(cursor) == mixture.sample_at(cursor));
}

TEST_CASE("mixture: draws_before equals counting draw_at", "[data][mixture]") {
  for (bool shuffle : {true, false}) {
    MixtureSampler mixture({{37, 1.0}, {100, 2.0}, {1000, 0.5}, {5, 1e-3}, {64, 0.3}},
                           SamplerOptions{.seed = 9, .shuffle = shuffle});
    std::vector<uint64_t> counts(mixture.num_sources(), 0);
    const uint64_t end = 6 * K + 10;
    for (uint64_t cursor = 0; cursor <= end; ++cursor) {
      // Every cursor within a few of a block boundary, and a stride elsewhere.
      const uint64_t to_boundary = std::min(cursor % K, K - cursor % K);
      if (to_boundary <= 6 || cursor % 97 == 0) REQUIRE(mixture.draws_before(cursor) == counts);
      ++counts[mixture.draw_at(cursor).source];
    }
  }
}

TEST_CASE("mixture: random access equals walking, even at huge cursors", "[data][mixture]") {
  MixtureSampler mixture({{37, 1.0}, {100, 2.0}, {1000, 0.5}, {5, 1e-3}},
                         SamplerOptions{.seed = 10});
  std::vector<MixtureSampler::Draw> walked;
  for (uint64_t cursor = 0; cursor < 3 * K; ++cursor) walked.push_back(mixture.draw_at(cursor));
  // Jump around in a scattered order.
  for (uint64_t i = 0; i < walked.size(); ++i) {
    const uint64_t cursor = (i * 7919) % walked.size();
    const MixtureSampler::Draw draw = mixture.draw_at(cursor);
    REQUIRE(draw.source == walked[cursor].source);
    REQUIRE(draw.sample == walked[cursor].sample);
    REQUIRE(draw.draw == walked[cursor].draw);
  }
  // At huge cursors: the counts before cover every cursor, the next cursor adds exactly its one
  // draw, and its draw number lies in its block's range (within a block of the count before it).
  const uint64_t max = std::numeric_limits<uint64_t>::max();
  for (uint64_t cursor : {uint64_t{1000000000000}, uint64_t{1000000000000} + K - 1,
                          uint64_t{1} << 50, (uint64_t{1} << 63) + 12345, max - K, max - 2}) {
    const std::vector<uint64_t> before = mixture.draws_before(cursor);
    CHECK(std::accumulate(before.begin(), before.end(), uint64_t{0}) == cursor);
    const MixtureSampler::Draw draw = mixture.draw_at(cursor);
    CHECK(draw.draw + K + 4 > before[draw.source]);
    CHECK(draw.draw < before[draw.source] + K + 4);
    CHECK(draw.sample < 1000);
    std::vector<uint64_t> after = before;
    ++after[draw.source];
    CHECK(mixture.draws_before(cursor + 1) == after);
  }
  const std::vector<uint64_t> all = mixture.draws_before(max);
  CHECK(std::accumulate(all.begin(), all.end(), uint64_t{0}) == max);
}

TEST_CASE("mixture: blocks tile the cursors with no gaps or repeats", "[data][mixture]") {
  // Per source, the draw numbers of cursors [0, end): never repeated, and every number of the blocks
  // that end before `end` present. A block is shorter than K + num_sources, so those blocks hold at
  // least the first draws_before(end - K - num_sources) numbers, and none reaches
  // draws_before(end + K + num_sources). Without shuffle the numbers come in cursor order, so any
  // prefix holds exactly 0..n-1.
  auto check = [](const MixtureSampler& mixture, uint64_t end) {
    std::vector<std::vector<uint64_t>> draws(mixture.num_sources());
    for (uint64_t cursor = 0; cursor < end; ++cursor) {
      const MixtureSampler::Draw draw = mixture.draw_at(cursor);
      draws[draw.source].push_back(draw.draw);
    }
    const uint64_t slack = K + mixture.num_sources();
    const std::vector<uint64_t> complete = mixture.draws_before(end > slack ? end - slack : 0);
    const std::vector<uint64_t> bound = mixture.draws_before(end + slack);
    const std::vector<uint64_t> exact = mixture.draws_before(end);
    for (size_t source = 0; source < draws.size(); ++source) {
      std::vector<uint64_t>& numbers = draws[source];
      std::sort(numbers.begin(), numbers.end());
      REQUIRE(std::adjacent_find(numbers.begin(), numbers.end()) == numbers.end());
      REQUIRE(numbers.size() == exact[source]);
      REQUIRE(numbers.size() >= complete[source]);
      CHECK(std::equal(numbers.begin(), numbers.begin() + complete[source],
                       iota(complete[source]).begin()));
      CHECK((numbers.empty() || numbers.back() < bound[source]));
    }
    return draws;
  };
  const std::vector<MixtureSource> sources{{37, 1.0}, {100, 2.0}, {1000, 0.5},
                                           {5, 1e-3}, {64, 0.3},  {1, 0.01}};
  check(MixtureSampler(sources, SamplerOptions{.seed = 11}), 50000);
  for (const std::vector<uint64_t>& numbers :
       check(MixtureSampler(sources, SamplerOptions{.seed = 11, .shuffle = false}), 50000))
    CHECK(numbers == iota(numbers.size()));
  // More sources than K: some blocks are empty and the block search steps over them.
  std::vector<MixtureSource> many(5000, MixtureSource{3, 1.0});
  MixtureSampler crowded(many, SamplerOptions{.seed = 12});
  CHECK(crowded.num_samples() == 15000);
  CHECK(crowded.draws_before(300) == count_draws(crowded, 300));
  check(crowded, 300);
}

TEST_CASE("mixture: the constructor rejects bad sources", "[data][mixture]") {
  const SamplerOptions options{.seed = 1};
  CHECK_THROWS_AS(MixtureSampler({}, options), std::invalid_argument);
  CHECK_THROWS_AS(MixtureSampler({{10, 1.0}, {0, 1.0}}, options), std::invalid_argument);
  CHECK_THROWS_AS(MixtureSampler({{10, 0.0}}, options), std::invalid_argument);
  CHECK_THROWS_AS(MixtureSampler({{10, -1.0}}, options), std::invalid_argument);
  CHECK_THROWS_AS(MixtureSampler({{10, std::nan("")}}, options), std::invalid_argument);
  CHECK_THROWS_AS(MixtureSampler({{10, std::numeric_limits<double>::infinity()}}, options),
                  std::invalid_argument);
  const uint64_t max = std::numeric_limits<uint64_t>::max();
  CHECK_THROWS_AS(MixtureSampler({{max, 1.0}, {1, 1.0}}, options), std::invalid_argument);
  CHECK_NOTHROW(MixtureSampler({{10, 1e300}, {10, 1e300}}, options));
}
