// The deterministic sampler. The order of the samples in an epoch is a pseudo-random permutation
// that is a pure function of (seed, epoch), computed per index in O(1) without materialising it
// (a Feistel network with cycle walking). Training position is one global cursor: sample number
// `cursor` is sample_at(cursor) in epoch cursor / N. So every sample is seen exactly once per
// epoch, and a resume jumps straight to a saved cursor with no replay.
#pragma once

#include <cstdint>
#include <memory>

namespace hftrain::data {

// A bijection of [0, n) keyed by a 64-bit key.
class Permutation {
 public:
  Permutation(uint64_t n, uint64_t key);
  uint64_t operator()(uint64_t i) const;
  uint64_t size() const { return n_; }

 private:
  uint64_t encrypt(uint64_t x) const;

  uint64_t n_;
  int half_bits_ = 0;
  uint64_t half_mask_ = 0;
  uint64_t keys_[4] = {0, 0, 0, 0};
};

struct SamplerOptions {
  uint64_t seed = 0;     // run.seed by default
  bool shuffle = true;   // false: samples in corpus order every epoch (validation)
};

class MixtureSampler;

class Sampler {
 public:
  Sampler(uint64_t num_samples, SamplerOptions options);
  // A weighted mixture's order (mixture.h): sample ids are the sources' samples one after another.
  explicit Sampler(std::shared_ptr<const MixtureSampler> mixture);
  const MixtureSampler* mixture() const { return mixture_.get(); }

  uint64_t num_samples() const { return n_; }
  uint64_t epoch_of(uint64_t cursor) const { return n_ == 0 ? 0 : cursor / n_; }
  // The sample index at global position `cursor` (any epoch). O(1).
  uint64_t sample_at(uint64_t cursor) const;

 private:
  uint64_t n_;
  SamplerOptions options_;
  std::shared_ptr<const MixtureSampler> mixture_;
};

// splitmix64: the mixing function keys and Feistel rounds are made from.
uint64_t mix64(uint64_t x);

}  // namespace hftrain::data
