#include "data/mixture.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

namespace hftrain::data {

namespace {

// b * K * q_s reaches about 2^109 for cursors near 2^64, so the quota arithmetic is 128-bit.
using Wide = unsigned __int128;

// Distinct streams for the block shuffles and the per-source shuffles, so that neither repeats the
// other or the plain Sampler's.
constexpr uint64_t kBlockStream = 0xA24BAED4963EE407ull;
constexpr uint64_t kSourceStream = 0x9FB21C651E98DF25ull;

// C_s(b): the draws of a source with quantum q (of Q in all) before block b.
Wide cumulative(uint64_t block, uint64_t quantum, uint64_t quanta_total) {
  return Wide{block} * MixtureSampler::kBlock * quantum / quanta_total;
}

Wide block_start(const std::vector<uint64_t>& quanta, uint64_t quanta_total, uint64_t block) {
  Wide start = 0;
  for (uint64_t q : quanta) start += cumulative(block, q, quanta_total);
  return start;
}

}  // namespace

struct MixtureSampler::Block {
  uint64_t index = 0;
  uint64_t start = 0;                // first cursor (at most the cursor located, so it fits)
  uint64_t size = 0;                 // cursors in the block
  std::vector<uint64_t> before;      // per source: C_s(index)
  std::vector<uint64_t> slots_end;   // per source: end of its slot range (prefix sums of quotas)

  size_t source_of(uint64_t slot) const {
    return static_cast<size_t>(std::upper_bound(slots_end.begin(), slots_end.end(), slot) -
                               slots_end.begin());
  }
};

MixtureSampler::MixtureSampler(std::vector<MixtureSource> sources, SamplerOptions options)
    : sources_(std::move(sources)), options_(options) {
  if (sources_.empty()) throw std::invalid_argument("MixtureSampler: no sources");
  double max_weight = 0;
  for (size_t s = 0; s < sources_.size(); ++s) {
    const MixtureSource& source = sources_[s];
    if (source.num_samples == 0)
      throw std::invalid_argument("MixtureSampler: source " + std::to_string(s) + " has no samples");
    if (!(std::isfinite(source.weight) && source.weight > 0))
      throw std::invalid_argument("MixtureSampler: source " + std::to_string(s) +
                                  " needs a finite weight > 0");
    if (total_ + source.num_samples < total_)
      throw std::invalid_argument("MixtureSampler: the sources' sample counts overflow");
    offsets_.push_back(total_);
    total_ += source.num_samples;
    max_weight = std::max(max_weight, source.weight);
  }
  // Relative to the largest weight, so that huge weights cannot sum to infinity.
  double sum = 0;
  for (const MixtureSource& source : sources_) sum += source.weight / max_weight;
  for (const MixtureSource& source : sources_) {
    // At least 1: a tiny weight still means some draws, never none.
    const long long q = std::max(1LL, std::llround(source.weight / max_weight / sum * 0x1p32));
    quanta_.push_back(static_cast<uint64_t>(q));
    quanta_total_ += static_cast<uint64_t>(q);
  }
}

MixtureSampler::Block MixtureSampler::locate(uint64_t cursor) const {
  // start(b) lies in (b*K - num_sources, b*K], so cursor / K is never past the cursor's block and
  // only a few steps up are left (more than one only when blocks are shorter than the sources).
  uint64_t b = cursor / kBlock;
  while (b > 0 && block_start(quanta_, quanta_total_, b) > cursor) --b;
  while (block_start(quanta_, quanta_total_, b + 1) <= cursor) ++b;

  Block block;
  block.index = b;
  Wide start = 0, end = 0;
  for (uint64_t q : quanta_) {
    const Wide before = cumulative(b, q, quanta_total_);
    const Wide after = cumulative(b + 1, q, quanta_total_);
    block.before.push_back(static_cast<uint64_t>(before));  // at most `cursor`
    start += before;
    end += after - before;
    block.slots_end.push_back(static_cast<uint64_t>(end));
  }
  block.start = static_cast<uint64_t>(start);
  block.size = static_cast<uint64_t>(end);
  return block;
}

uint64_t MixtureSampler::slot_at(const Block& block, uint64_t position) const {
  if (!options_.shuffle) return position;
  return Permutation(block.size, mix64(mix64(options_.seed ^ kBlockStream) ^ block.index))(position);
}

MixtureSampler::Draw MixtureSampler::draw_at(uint64_t cursor) const {
  const Block block = locate(cursor);
  const uint64_t slot = slot_at(block, cursor - block.start);
  Draw draw;
  draw.source = block.source_of(slot);
  const uint64_t range_start = draw.source == 0 ? 0 : block.slots_end[draw.source - 1];
  draw.draw = block.before[draw.source] + (slot - range_start);

  const uint64_t n = sources_[draw.source].num_samples;
  draw.source_epoch = draw.draw / n;
  const uint64_t position = draw.draw % n;
  if (!options_.shuffle) {
    draw.sample = position;
  } else {
    const uint64_t key =
        mix64(mix64(mix64(options_.seed ^ kSourceStream) ^ draw.source) ^ draw.source_epoch);
    draw.sample = Permutation(n, key)(position);
  }
  return draw;
}

uint64_t MixtureSampler::sample_at(uint64_t cursor) const {
  const Draw draw = draw_at(cursor);
  return offsets_[draw.source] + draw.sample;
}

std::vector<uint64_t> MixtureSampler::draws_before(uint64_t cursor) const {
  const Block block = locate(cursor);
  std::vector<uint64_t> counts = block.before;
  // The block's positions before the cursor map to scattered slots when shuffled, so they are
  // counted one by one (fewer than K + num_sources of them).
  for (uint64_t position = 0; position < cursor - block.start; ++position)
    ++counts[block.source_of(slot_at(block, position))];
  return counts;
}

}  // namespace hftrain::data
