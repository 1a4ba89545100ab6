#include "train/step/step_math.h"

#include <algorithm>
#include <cmath>

#include <torch/torch.h>

namespace hftrain::train {
namespace F = torch::nn::functional;

torch::Tensor token_loss_sum(const torch::Tensor& logits, const torch::Tensor& labels, double label_smoothing) {
  const int64_t vocab = logits.size(-1);
  return F::cross_entropy(logits.reshape({-1, vocab}).to(torch::kFloat32), labels.reshape({-1}),
                          F::CrossEntropyFuncOptions().ignore_index(-100).reduction(torch::kSum).label_smoothing(
                              label_smoothing));
}

torch::Tensor clip_grad_norm(const std::vector<torch::Tensor>& params, double max_norm) {
  std::vector<torch::Tensor> grads;
  for (const auto& p : params) {
    if (p.grad().defined()) grads.push_back(p.grad());
  }
  return clip_grads(grads, max_norm);
}

torch::Tensor clip_grads(const std::vector<torch::Tensor>& grads, double max_norm,
                         const std::function<void(torch::Tensor&)>& sum_over_ranks,
                         const std::vector<torch::Tensor>& weights) {
  if (grads.empty() && !sum_over_ranks) return torch::zeros({}, torch::kFloat32);
  torch::Tensor total;
  if (sum_over_ranks) {
    torch::Tensor squares = torch::zeros({1}, torch::kFloat32);
    const bool scalars =
        std::all_of(weights.begin(), weights.end(), [](const torch::Tensor& w) { return w.dim() == 0; });
    if (!weights.empty() && scalars && !grads.empty()) {
      // One weight per tensor (ddp): the fused norms, weighted.
      TORCH_CHECK(weights.size() == grads.size(), "clip_grads: one weight per gradient");
      const auto norms = torch::stack(at::_foreach_norm(grads, 2)).to(torch::kFloat32);
      squares = (norms.square() * torch::stack(weights).to(norms.device())).sum().reshape({1});
    } else if (!weights.empty()) {
      TORCH_CHECK(weights.size() == grads.size(), "clip_grads: one weight per gradient");
      for (size_t i = 0; i < grads.size(); ++i) {
        squares = squares.to(grads[i].device()) +
                  (grads[i].to(torch::kFloat32).square() * weights[i].to(grads[i].device())).sum();
      }
    } else if (!grads.empty()) {
      squares = torch::stack(at::_foreach_norm(grads, 2)).to(torch::kFloat32).square().sum().reshape({1});
    }
    sum_over_ranks(squares);
    total = squares.sqrt().reshape({});
  } else {
    auto norms = at::_foreach_norm(grads, 2);
    total = torch::linalg_vector_norm(torch::stack(norms).to(torch::kFloat32), 2, std::nullopt, false, std::nullopt);
  }
  if (std::isfinite(max_norm) && !grads.empty()) {
    auto coef = (max_norm / (total + 1e-6)).clamp_max(1.0);
    at::_foreach_mul_(grads, coef);
  }
  return total;
}

}  // namespace hftrain::train
