#include "train/report/baseline.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace hftrain::train {
namespace {

// Calls fn(token) for each token that carries loss, in chunks.
template <class Fn>
void for_each_target(const data::TokenDataset& d, uint64_t max_tokens, Fn fn) {
  constexpr uint64_t kChunk = 1 << 20;
  std::vector<int64_t> tokens(kChunk);
  std::vector<uint8_t> train(kChunk);
  const uint64_t total = std::min(d.num_tokens(), max_tokens);
  for (uint64_t begin = 0; begin < total; begin += kChunk) {
    const uint64_t n = std::min(kChunk, total - begin);
    d.read(begin, n, tokens.data(), train.data());
    for (uint64_t i = 0; i < n; ++i) {
      if (train[i]) fn(tokens[i]);
    }
  }
}

}  // namespace

double unigram_baseline(const data::TokenDataset& train, const data::TokenDataset& eval, int64_t vocab_size,
                        uint64_t max_tokens) {
  std::vector<double> counts(static_cast<size_t>(vocab_size), 1.0);  // add-one smoothing
  double total = static_cast<double>(vocab_size);
  for_each_target(train, max_tokens, [&](int64_t t) {
    if (t >= 0 && t < vocab_size) {
      counts[static_cast<size_t>(t)] += 1.0;
      total += 1.0;
    }
  });
  double nll = 0;
  uint64_t n = 0;
  for_each_target(eval, max_tokens, [&](int64_t t) {
    if (t >= 0 && t < vocab_size) {
      nll -= std::log(counts[static_cast<size_t>(t)] / total);
      ++n;
    }
  });
  return n == 0 ? 0.0 : nll / static_cast<double>(n);
}

}  // namespace hftrain::train
