// Lion (Chen et al., 2023, "Symbolic Discovery of Optimization Algorithms", Algorithm 2):
//   update = sign(beta1 * m + (1 - beta1) * g)
//   p      = p * (1 - lr * wd) - lr * update
//   m      = beta2 * m + (1 - beta2) * g
#pragma once

#include "optim/optimizer.h"

namespace hftrain::optim {

std::unique_ptr<Optimizer> make_lion(std::vector<ParamGroup> groups, double beta1, double beta2);

}  // namespace hftrain::optim
