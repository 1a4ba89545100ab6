// The memory a strategy holds on this rank, set beside what its ZeRO formula predicts
// (parallel/plan/memory_plan.h): one log line after the first step, when the optimizer state exists.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <torch/types.h>

#include "config/config.h"
#include "parallel/comm/world.h"
#include "parallel/data_parallel/strategy.h"
#include "parallel/plan/memory_plan.h"

namespace hftrain::parallel {

// `parameters`: the model's, by name (their count is Ψ); `units`: what zero3 gathers one at a time.
// The formula's inputs are the strategy's options (ShardingStrategy::options()).
std::string memory_report(const ShardingStrategy& strategy, const World& world,
                          const std::vector<std::pair<std::string, torch::Tensor>>& parameters, UnitSizes units);

}  // namespace hftrain::parallel
