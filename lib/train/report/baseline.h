// The unigram baseline: the loss a model that knows only token frequencies would get. A trained
// model's eval loss is meaningful next to it ("far below the unigram baseline").
#pragma once

#include <cstdint>

#include "data/dataset.h"

namespace hftrain::train {

// Mean cross-entropy (nats per token) of `eval`'s target tokens under the add-one-smoothed token
// frequencies of `train`. Reads at most `max_tokens` of each.
double unigram_baseline(const data::TokenDataset& train, const data::TokenDataset& eval, int64_t vocab_size,
                        uint64_t max_tokens = 50'000'000);

}  // namespace hftrain::train
