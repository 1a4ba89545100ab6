// What the optimizers that project a weight matrix's gradient to a low rank share (galore_adamw.h:
// GaLore's SVD projections, apollo_adamw.h: APOLLO's random ones): which side a projection takes,
// the shapes and products of projecting and projecting back, the Hugging Face legacy AdamW moments
// both reference implementations run on the projected gradient, and the matrices a list of
// parameter-name globs targets.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/types.h>

#include "config/config.h"
#include "optim/optimizer.h"

namespace hftrain::optim::low_rank {

// right: R = G P^T (P: k x cols); left: R = P^T G (P: rows x k); both: R = P_l^T G P_r^T.
enum class Side { kRight, kLeft, kBoth };

const char* projection_name(config::GaloreProjection p);
// std takes right for a tall (or square) matrix and left for a wide one, reverse_std the other.
Side side_of(config::GaloreProjection p, int64_t rows, int64_t cols);

// The shapes of a projected matrix's pieces at rank k: its low-rank gradient, P (or P_l) and P_r.
struct Shapes {
  std::vector<int64_t> low, ortho, ortho_right;
};
Shapes shapes_of(Side side, int64_t rows, int64_t cols, int64_t k);

torch::Tensor project(const torch::Tensor& grad, const torch::Tensor& ortho, const torch::Tensor& ortho_right,
                      Side side);
torch::Tensor project_back(const torch::Tensor& low, const torch::Tensor& ortho, const torch::Tensor& ortho_right,
                           Side side);

// transformers' legacy AdamW, as galore_torch and apollo-torch step it: the moments of `grad`
// updated in place (step counted from 1 after the update), the direction m / (sqrt(v) + eps)
// returned and the step size lr sqrt(1 - beta2^t) / (1 - beta1^t) written to `step_size`.
struct LegacyAdam {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
};
torch::Tensor adam_direction(torch::Tensor& exp_avg, torch::Tensor& exp_avg_sq, const torch::Tensor& grad,
                             int64_t step, const LegacyAdam& adam, double lr, double* step_size);

// Which of `params` the globs of `key` (e.g. "optimizer.galore.target_modules") target: 2-D
// parameters whose name matches one. Throws util::ConfigError when a glob matches no matrix, or
// the list is empty (`what` names the optimizer: "galore_adamw would project nothing").
std::vector<bool> matrix_targets(const std::vector<std::string>& globs, const NamedParams& params,
                                 const std::string& key, const std::string& what);

}  // namespace hftrain::optim::low_rank
