// A callback after a parameter's gradient has been accumulated in a backward pass (once per
// backward, with the sum of every use), through the parameter's AccumulateGrad node.
#pragma once

#include <functional>
#include <memory>

#include <torch/types.h>

namespace hftrain::parallel {

// Returns the hooked node: keep it alive as long as the hook must stay (the parameter holds it
// only weakly, and a new node without the hook would replace a dropped one).
std::shared_ptr<void> after_grad_accumulated(const torch::Tensor& param, std::function<void()> callback);

// Whether `node` (from after_grad_accumulated) is still `param`'s AccumulateGrad node. set_data
// to another device or dtype drops it (autograd's VariableHooks::set_data), and the next backward
// would make a new node without the hook.
bool is_grad_accumulator(const torch::Tensor& param, const std::shared_ptr<void>& node);

}  // namespace hftrain::parallel
