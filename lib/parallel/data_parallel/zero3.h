// zero3 (fsdp) and hybrid (strategy.h): the parameters themselves sharded, unit by unit (the
// model's parameter units: the root, then each transformer block; model/parameter_units.h).
//
// Each unit is one flat fp32 buffer padded to a multiple of the shard group's size; rank r keeps
// chunk r as its master shard (the optimizer updates pieces of it), and a gradient chunk. The
// model's parameters are views of the unit's whole buffer, whose storage exists only while the
// unit is gathered:
//   forward   before a unit: all-gather it (and launch the next unit's gather); after: free it
//             and hook its output
//   backward  the output hook gathers the unit again (and launches the previous unit's gather);
//             when the unit's last gradient has accumulated, its gradients are reduce-scattered
//             into the gradient chunks and the unit is freed
// The root unit (embeddings, final norm, head) is used at both ends of the forward, so it stays
// whole from its gather to the reduction of its gradients. Gradients are reduced after every
// micro-batch (nothing whole survives a backward); at most two reductions are in flight.
//
// hybrid: the shard group is the node (World::intra_node), and the gradient chunks, accumulated
// over the step's micro-batches, are all-reduced once per step across the nodes' ranks with the
// same local rank (World::inter_node).
#pragma once

#include <memory>

#include "parallel/data_parallel/strategy.h"

namespace hftrain::parallel {

std::unique_ptr<ShardingStrategy> make_zero3_strategy(World& world, const StrategyOptions& options,
                                                      const optim::NamedParams& params,
                                                      const model::ParameterUnits& units, bool hybrid);

}  // namespace hftrain::parallel
