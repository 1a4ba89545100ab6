// The arithmetic of one optimizer step that has to be exactly right.
#pragma once

#include <functional>
#include <vector>

#include <torch/types.h>

namespace hftrain::train {

// Sum (not mean) of the next-token cross-entropy over every target that is not -100, in fp32,
// with label smoothing. Dividing the sums of all micro-batches by their total target count makes
// gradient accumulation equal one big batch even when padding and masks differ between them.
// logits (B, T, V); labels (B, T) int64.
torch::Tensor token_loss_sum(const torch::Tensor& logits, const torch::Tensor& labels, double label_smoothing);

// The global L2 norm of all gradients, as a device tensor (no host synchronisation); when
// `max_norm` is finite, gradients are scaled so that the norm is at most max_norm (as
// torch.nn.utils.clip_grad_norm_ does, with its 1e-6).
torch::Tensor clip_grad_norm(const std::vector<torch::Tensor>& params, double max_norm);
// The same over gradient tensors directly. With `sum_over_ranks` (sharded gradients: each rank
// holds a disjoint part), the squared norms are summed over the ranks before the square root;
// `weights` (one per gradient: a scalar, or a tensor of its shape; or empty: all 1) weigh its
// squared elements in that sum (tensor parallelism: 1 / tp where every rank of the group holds
// the parameter whole, 1 for a piece; ShardingStrategy::norm_weights).
torch::Tensor clip_grads(const std::vector<torch::Tensor>& grads, double max_norm,
                         const std::function<void(torch::Tensor&)>& sum_over_ranks = {},
                         const std::vector<torch::Tensor>& weights = {});

// A micro-batch's loss sum divided by the step's target count: the global one (a device scalar,
// over every data-parallel rank) where there is one, this rank's otherwise.
struct LossNormaliser {
  double local = 1;
  torch::Tensor global;
  torch::Tensor operator()(const torch::Tensor& loss_sum) const {
    return global.defined() ? loss_sum / global : loss_sum / local;
  }
};

}  // namespace hftrain::train
