// Parameter units: the groups of parameters that a sharding strategy which shards the parameters
// themselves (zero3, hybrid; parallel/data_parallel/zero3.h) materialises one at a time. The model tells the
// strategy when a unit is about to be used and when its forward is done; the strategy gathers
// the unit's parameters before, frees them after, and hooks the unit's output so that they are
// gathered again before its backward.
//
// Units of the transformer: unit 0 is the root (embeddings, final norm, untied head: used at both
// ends of the forward, so it stays whole until its gradients are reduced), unit i + 1 is block i.
#pragma once

#include <cstddef>
#include <vector>

#include <torch/types.h>

namespace hftrain::model {

class UnitHooks {
 public:
  virtual ~UnitHooks() = default;
  // Before the first use of the unit's parameters in a forward.
  virtual void before_forward(size_t unit) = 0;
  // After the unit's forward; returns `out`, or `out` with a hook that runs before the unit's
  // backward.
  virtual torch::Tensor after_forward(size_t unit, const torch::Tensor& out) = 0;
  // The unit's parameters whole outside a forward (to send the weights themselves), without
  // gathering any other unit ahead, and freed again after.
  virtual void gather_unit(size_t unit) = 0;
  virtual void release_unit(size_t unit) = 0;
};

// Per unit, indices into the model's parameters_by_name().
using ParameterUnits = std::vector<std::vector<size_t>>;

}  // namespace hftrain::model
