// zero1 for optimizers whose state is neither element-wise nor block-wise (adafactor's row and
// column factors, galore_adamw's projections of whole matrices): the optimizer
// state is partitioned by whole parameters instead of by flat chunks, as PyTorch's
// ZeroRedundancyOptimizer partitions it. Gradients are all-reduced as under ddp; each rank steps
// the parameters it owns and broadcasts them to the others.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "optim/optimizer.h"

namespace hftrain::parallel {

// The owning rank of each parameter (by element count): largest first, each to the rank that
// holds the fewest elements so far (the lowest rank on a tie). Deterministic: every rank computes
// the same owners.
std::vector<int> partition_by_size(const std::vector<int64_t>& numels, int ranks);

// `state` with only the tensors and "steps" of the parameters named in `owned`: what a rank that
// owns those loads from a whole saved state (the others load as never stepped).
optim::OptimizerState only_owned(optim::OptimizerState state, const std::set<std::string>& owned);

}  // namespace hftrain::parallel
