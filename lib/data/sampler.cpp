#include "data/sampler.h"

#include "data/mixture.h"

namespace hftrain::data {

uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

Permutation::Permutation(uint64_t n, uint64_t key) : n_(n) {
  // The smallest even bit width whose range covers n: cycle walking then needs fewer than four
  // steps on average (the range is below 4n).
  int bits = 2;
  while (bits < 64 && (uint64_t{1} << bits) < n) bits += 2;
  half_bits_ = bits / 2;
  half_mask_ = (uint64_t{1} << half_bits_) - 1;
  uint64_t k = key;
  for (auto& round_key : keys_) {
    k = mix64(k);
    round_key = k;
  }
}

uint64_t Permutation::encrypt(uint64_t x) const {
  uint64_t left = x >> half_bits_;
  uint64_t right = x & half_mask_;
  for (uint64_t round_key : keys_) {
    uint64_t next = left ^ (mix64(right ^ round_key) & half_mask_);
    left = right;
    right = next;
  }
  return (left << half_bits_) | right;
}

uint64_t Permutation::operator()(uint64_t i) const {
  if (n_ <= 1) return i;
  // Cycle walking: the Feistel network permutes [0, 2^bits); following the cycle from i until it
  // re-enters [0, n) gives a permutation of [0, n).
  uint64_t y = encrypt(i);
  while (y >= n_) y = encrypt(y);
  return y;
}

Sampler::Sampler(uint64_t num_samples, SamplerOptions options) : n_(num_samples), options_(options) {}

Sampler::Sampler(std::shared_ptr<const MixtureSampler> mixture)
    : n_(mixture->num_samples()), mixture_(std::move(mixture)) {}

uint64_t Sampler::sample_at(uint64_t cursor) const {
  if (mixture_) return mixture_->sample_at(cursor);
  if (n_ == 0) return 0;
  const uint64_t epoch = cursor / n_;
  const uint64_t position = cursor % n_;
  if (!options_.shuffle) return position;
  return Permutation(n_, mix64(options_.seed) ^ mix64(epoch + 0x5851F42D4C957F2Dull))(position);
}

}  // namespace hftrain::data
