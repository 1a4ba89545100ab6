// GaLore AdamW (Zhao et al., 2024, "GaLore: Memory-Efficient LLM Training by Gradient Low-Rank
// Projection"), as galore_torch 1.0's GaLoreAdamW computes it (what the Trainer's
// optim="galore_adamw" runs). For a projected matrix W (m x n) with gradient G, at the parameter's
// step t (counted from 0 before the update):
//   every update_proj_gap steps (t % gap == 0, and at its first step) a new projection from the
//   SVD of G (float32, torch.linalg.svd, full_matrices=False), k = min(rank, m, n):
//     right: P = Vh[:k] (k x n), R = G P^T (m x k)      left: P = U[:, :k] (m x k), R = P^T G (k x n)
//     full:  P_l = U[:, :k], P_r = Vh[:k], R = P_l^T G P_r^T (k x k)
//   std takes right when m >= n and left otherwise, reverse_std the other one;
//   then Adam on R in the legacy Hugging Face form (eps outside the root, bias correction in the
//   step size), and the update projected back (R' P, P R' or P_l R' P_r) times `scale`:
//     m = beta1 m + (1 - beta1) R;  v = beta2 v + (1 - beta2) R^2;  t += 1
//     W -= lr sqrt(1 - beta2^t) / (1 - beta1^t) * scale * back(m / (sqrt(v) + eps))
//     W -= lr wd W   (decoupled, after the update)
// Parameters that are not projected take the same update without projection (scale 1). The
// moments of a projected matrix have R's shape: an m x n matrix with m >= n under std keeps
// k n + 2 m k numbers of state instead of AdamW's 2 m n.
//
// galore_torch decides where to project back from the shape of the low-rank update, which for
// reverse_std with a rank at or above the smaller side multiplies mismatched shapes; here the side
// chosen when projecting is kept, which is the same in every case galore_torch runs.
//
// State keys (see optimizer.h): exp_avg, exp_avg_sq (low-rank shapes when projected), ortho (the
// projection: P; for full, ortho holds P_l and ortho_right P_r); meta "steps" per parameter, and
// "hyperparameters" with the projection settings. A resumed run recomputes the projection at the
// same steps as an uninterrupted one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "optim/optimizer.h"

namespace hftrain::optim {

struct GaloreSettings {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  int64_t rank = 128;
  int64_t update_proj_gap = 200;
  double scale = 0.25;
  config::GaloreProjection proj_type = config::GaloreProjection::kStd;
};

// `projected`: one flag per parameter, in group order then parameter order; a projected one must
// be 2-D. Throws util::ConfigError when the flags do not fit the groups or a flag marks a tensor
// that is not a matrix.
std::unique_ptr<Optimizer> make_galore_adamw(std::vector<ParamGroup> groups, std::vector<bool> projected,
                                             const GaloreSettings& settings);

// Which of `params` optimizer.galore.target_modules projects: 2-D parameters whose name matches a
// glob. Throws util::ConfigError when a glob matches no matrix, or nothing is projected.
std::vector<bool> galore_targets(const std::vector<std::string>& globs, const NamedParams& params);

}  // namespace hftrain::optim
