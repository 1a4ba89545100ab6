// A weighted mixture of data sources, deterministic from (seed, cursor) with O(num_sources) random
// access, so a resume jumps straight to a saved cursor and the result never depends on world size
// (ranks only decide which cursors they take).
//
// How a cursor becomes a draw:
//  - Weights are quantised to integers q_s = max(1, round(weight_s / sum(weights) * 2^32)), Q = sum.
//    So a tiny weight still gets draws (at least 1 in 2^32), and the proportions below are exact
//    ratios of integers, not floating-point sums that drift over a long run.
//  - Cursors are grouped in blocks of about K = 4096. Source s has received exactly
//    C_s(b) = floor(b * K * q_s / Q) draws before block b, so block b holds quota_s(b) =
//    C_s(b+1) - C_s(b) draws of s and starts at cursor sum_s C_s(b) (a block's size may differ from
//    K by fewer than num_sources). Finding a cursor's block is a division plus a few steps.
//  - Inside a block the order is shuffled by a permutation keyed by (seed, block) (in order when
//    shuffle is off): position p maps to a slot, and the slots are split among the sources by their
//    quotas in source order. The source's draw number is C_s(b) + the slot's rank in its range, so
//    block b hands out exactly the draw numbers [C_s(b), C_s(b+1)) of each source, but in shuffled
//    order: a draw number equals draws_before(cursor)[source] only at block boundaries (or always
//    with shuffle off).
//  - Inside a source, draw d is sample d % n_s of that source's epoch d / n_s, through a permutation
//    keyed by (seed, source, source epoch) (in order when shuffle is off).
//
// Guarantees:
//  - Everything is a pure function of (sources, seed, shuffle, cursor).
//  - At every block boundary each source's count since cursor 0 is within 1 draw of its weight
//    share, and each block holds each source's share of that block within 1 draw; a window that
//    does not start and end on block boundaries adds only the shuffle noise of its two end blocks.
//  - Every sample of a source is drawn exactly once per epoch of that source, in a new order each
//    of its epochs; sources cycle independently (a small heavy source repeats while a large light
//    one is still in its first pass).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "data/sampler.h"

namespace hftrain::data {

struct MixtureSource {
  uint64_t num_samples = 0;  // > 0
  double weight = 0;         // > 0, finite; relative (need not sum to 1)
};

class MixtureSampler {
 public:
  // Cursors per block (nominal).
  static constexpr uint64_t kBlock = 4096;

  // Throws std::invalid_argument for no sources, a source with 0 samples, a weight that is not
  // finite and > 0, or sample counts whose sum overflows. Callers validate user input first with
  // better messages; this guards against programming errors.
  MixtureSampler(std::vector<MixtureSource> sources, SamplerOptions options);

  size_t num_sources() const { return sources_.size(); }
  // One mixture "epoch": the sum of the sources' samples.
  uint64_t num_samples() const { return total_; }
  uint64_t epoch_of(uint64_t cursor) const { return cursor / total_; }

  struct Draw {
    size_t source = 0;          // which source
    uint64_t sample = 0;        // the sample index inside that source
    uint64_t source_epoch = 0;  // how many full passes over that source came before this draw
    uint64_t draw = 0;          // this draw's number among that source's draws (0-based; in
                                // cursor order across blocks, shuffled within one)
  };
  Draw draw_at(uint64_t cursor) const;
  // The draw's id in the concatenation of the sources' sample ranges: offset(source) + sample.
  uint64_t sample_at(uint64_t cursor) const;
  // How many of the cursors [0, cursor) each source received: O(num_sources) plus up to one block.
  std::vector<uint64_t> draws_before(uint64_t cursor) const;
  // The first global id of a source.
  uint64_t offset(size_t source) const { return offsets_.at(source); }

 private:
  // The block holding a cursor: where it starts, its size, and per source the draws before it and
  // the end of its slot range (defined in mixture.cpp).
  struct Block;
  Block locate(uint64_t cursor) const;
  // The slot that `position` of `block` takes.
  uint64_t slot_at(const Block& block, uint64_t position) const;

  std::vector<MixtureSource> sources_;
  SamplerOptions options_;
  std::vector<uint64_t> quanta_;   // q_s
  uint64_t quanta_total_ = 0;      // Q
  std::vector<uint64_t> offsets_;  // first global id per source
  uint64_t total_ = 0;
};

}  // namespace hftrain::data
