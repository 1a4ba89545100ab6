// Adagrad as torch.optim.Adagrad computes it (the rule of its per-tensor path, which PyTorch takes
// on the CPU): L2 weight decay added to the gradient, sum += g^2, p -= clr g / (sqrt(sum) + eps),
// clr = lr / (1 + (step - 1) lr_decay) with the parameter's own step count. Multi-tensor kernels
// (ATen's _foreach_*), the same arithmetic in the same order. State per parameter: "sum", and its
// step count in the meta.
#pragma once

#include <memory>
#include <vector>

#include "optim/optimizer.h"

namespace hftrain::optim {

struct AdagradSettings {
  double lr_decay = 0;
  double initial_accumulator_value = 0;
  double eps = 1e-10;
};

std::unique_ptr<Optimizer> make_adagrad(std::vector<ParamGroup> groups, const AdagradSettings& settings);

}  // namespace hftrain::optim
