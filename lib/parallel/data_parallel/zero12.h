// zero1 and zero2 (strategy.h): the gradient buckets of ddp, each cut into one chunk per rank;
// every rank updates only its chunk and the updated parameters are all-gathered.
#pragma once

#include <memory>

#include "parallel/data_parallel/strategy.h"

namespace hftrain::parallel {

std::unique_ptr<ShardingStrategy> make_zero12_strategy(World& world, const StrategyOptions& options,
                                                       const optim::NamedParams& params, int stage);

}  // namespace hftrain::parallel
