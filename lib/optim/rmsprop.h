// RMSprop as torch.optim.RMSprop computes it: L2 weight decay added to the gradient,
// square_avg = alpha square_avg + (1 - alpha) g^2; centered: grad_avg = lerp(grad_avg, g, 1 - alpha)
// and the denominator sqrt(square_avg - grad_avg^2) + eps, else sqrt(square_avg) + eps; with
// momentum buf = momentum buf + g / denominator, p -= lr buf, else p -= lr g / denominator.
// Multi-tensor kernels (ATen's _foreach_*), the same arithmetic in the same order as the per-tensor
// rule. State per parameter, with torch's names: "square_avg", "momentum_buffer" (momentum > 0),
// "grad_avg" (centered); its step count in the meta.
#pragma once

#include <memory>
#include <vector>

#include "optim/optimizer.h"

namespace hftrain::optim {

struct RmspropSettings {
  double alpha = 0.99;
  double eps = 1e-8;
  double momentum = 0;
  bool centered = false;
};

std::unique_ptr<Optimizer> make_rmsprop(std::vector<ParamGroup> groups, const RmspropSettings& settings);

}  // namespace hftrain::optim
