#include "optim/low_rank.h"

#include <fnmatch.h>

#include <algorithm>
#include <cmath>

#include <torch/torch.h>

#include "util/error.h"
#include "util/strings.h"

namespace hftrain::optim::low_rank {

using config::GaloreProjection;

const char* projection_name(GaloreProjection p) {
  switch (p) {
    case GaloreProjection::kStd: return "std";
    case GaloreProjection::kReverseStd: return "reverse_std";
    case GaloreProjection::kRight: return "right";
    case GaloreProjection::kLeft: return "left";
    case GaloreProjection::kFull: return "full";
  }
  return "std";
}

Side side_of(GaloreProjection p, int64_t rows, int64_t cols) {
  switch (p) {
    case GaloreProjection::kStd: return rows >= cols ? Side::kRight : Side::kLeft;
    case GaloreProjection::kReverseStd: return rows >= cols ? Side::kLeft : Side::kRight;
    case GaloreProjection::kRight: return Side::kRight;
    case GaloreProjection::kLeft: return Side::kLeft;
    case GaloreProjection::kFull: return Side::kBoth;
  }
  return Side::kRight;
}

Shapes shapes_of(Side side, int64_t rows, int64_t cols, int64_t k) {
  switch (side) {
    case Side::kRight: return {{rows, k}, {k, cols}, {}};
    case Side::kLeft: return {{k, cols}, {rows, k}, {}};
    case Side::kBoth: return {{k, k}, {rows, k}, {k, cols}};
  }
  return {};
}

torch::Tensor project(const torch::Tensor& grad, const torch::Tensor& ortho, const torch::Tensor& ortho_right,
                      Side side) {
  switch (side) {
    case Side::kRight: return torch::matmul(grad, ortho.t());
    case Side::kLeft: return torch::matmul(ortho.t(), grad);
    case Side::kBoth: return torch::matmul(torch::matmul(ortho.t(), grad), ortho_right.t());
  }
  return grad;
}

torch::Tensor project_back(const torch::Tensor& low, const torch::Tensor& ortho, const torch::Tensor& ortho_right,
                           Side side) {
  switch (side) {
    case Side::kRight: return torch::matmul(low, ortho);
    case Side::kLeft: return torch::matmul(ortho, low);
    case Side::kBoth: return torch::matmul(torch::matmul(ortho, low), ortho_right);
  }
  return low;
}

torch::Tensor adam_direction(torch::Tensor& exp_avg, torch::Tensor& exp_avg_sq, const torch::Tensor& grad,
                             int64_t step, const LegacyAdam& adam, double lr, double* step_size) {
  if (!exp_avg.defined()) {
    exp_avg = torch::zeros_like(grad);
    exp_avg_sq = torch::zeros_like(grad);
  }
  exp_avg.mul_(adam.beta1).add_(grad, 1.0 - adam.beta1);
  exp_avg_sq.mul_(adam.beta2).addcmul_(grad, grad, 1.0 - adam.beta2);
  const torch::Tensor denom = exp_avg_sq.sqrt().add_(adam.eps);
  const double t = static_cast<double>(step);
  *step_size = lr * std::sqrt(1.0 - std::pow(adam.beta2, t)) / (1.0 - std::pow(adam.beta1, t));
  return exp_avg / denom;
}

std::vector<bool> matrix_targets(const std::vector<std::string>& globs, const NamedParams& params,
                                 const std::string& key, const std::string& what) {
  std::vector<bool> out(params.size(), false);
  for (const auto& glob : globs) {
    bool used = false;
    for (size_t i = 0; i < params.size(); ++i) {
      if (params[i].second.dim() == 2 && ::fnmatch(glob.c_str(), params[i].first.c_str(), 0) == 0) {
        out[i] = used = true;
      }
    }
    if (!used) {
      std::vector<std::string> sample;
      for (const auto& [name, p] : params) {
        if (p.dim() == 2 && sample.size() < 6) sample.push_back(name);
      }
      throw util::ConfigError("`" + key + "` glob '" + glob + "' matches no weight matrix",
                              "matrices are named like: " + util::join(sample, ", "));
    }
  }
  if (globs.empty()) {
    throw util::ConfigError("`" + key + "` is empty: " + what, "name the matrices, e.g. ['*.attn.*', '*.mlp.*']");
  }
  return out;
}

}  // namespace hftrain::optim::low_rank
