// Activation checkpointing: run a block without keeping its activations and recompute them during
// the backward pass, trading compute for memory. LibTorch has no torch.utils.checkpoint, so this is
// the reentrant variant as a custom autograd Function: forward under no_grad, backward recomputes
// the block with the same RNG and autocast state and back-propagates through it.
#pragma once

#include <functional>
#include <vector>

#include <torch/types.h>

namespace hftrain::model {

using BlockFn = std::function<torch::Tensor(const torch::Tensor&)>;
using BlockFnMany = std::function<std::vector<torch::Tensor>(const torch::Tensor&)>;

// y = fn(x), with fn's activations recomputed during backward. Gradients reach x and every
// parameter fn uses. `x` must require grad (a block's input inside a model always does).
torch::Tensor checkpointed(BlockFn fn, const torch::Tensor& x);
// The same for a block with several outputs (a mixture of experts' block and its router's
// statistics): the gradients of every output that one reaches back through the recomputation.
std::vector<torch::Tensor> checkpointed(BlockFnMany fn, const torch::Tensor& x);

}  // namespace hftrain::model
