// AdamW through ATen's fused kernel (at::_fused_adamw_, the kernel behind PyTorch's
// `AdamW(fused=True)` on the CPU and on CUDA): one call per group updates every parameter, its
// moments and step count, where LibTorch's torch::optim::AdamW runs several kernels per parameter.
// The state keeps AdamW's names (exp_avg, exp_avg_sq, max_exp_avg_sq with amsgrad, a step count
// per parameter), so checkpoints from either implementation load into the other.
#pragma once

#include <memory>
#include <vector>

#include "optim/optimizer.h"

namespace hftrain::optim {

struct AdamWSettings {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  bool amsgrad = false;
};

std::unique_ptr<Optimizer> make_fused_adamw(std::vector<ParamGroup> groups, const AdamWSettings& settings);

}  // namespace hftrain::optim
