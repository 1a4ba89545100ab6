// SGD through ATen's fused kernel (at::_fused_sgd_, the kernel behind PyTorch's SGD(fused=True)
// on the CPU and on CUDA): one call per group and device/dtype. With momentum it keeps one
// momentum_buffer per parameter (the name LibTorch's SGD used, so checkpoints load either way);
// plain SGD keeps no state at all.
#pragma once

#include <memory>
#include <vector>

#include "optim/optimizer.h"

namespace hftrain::optim {

std::unique_ptr<Optimizer> make_fused_sgd(std::vector<ParamGroup> groups, double momentum, bool nesterov);

}  // namespace hftrain::optim
