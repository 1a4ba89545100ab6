// APOLLO (Zhu et al., 2024, "APOLLO: SGD-like Memory, AdamW-level Performance"), as apollo-torch
// 1.0's APOLLOAdamW computes it (what the Trainer's optim="apollo_adamw" runs). For a targeted
// matrix W (rows x cols) with gradient G, at the parameter's step t (counted from 0 before the update):
//   every update_proj_gap steps (t % gap == 0, and at its first step) a new random projection
//   P, float32 N(0, 1/rank) from a generator seeded with the parameter's seed, which then advances
//   to the last of 15 int64 draws from a generator seeded with it (apollo-torch's next_seed); a
//   parameter's first seed is its 1-based position in the optimizer's parameters:
//     right: P is rank x cols, R = G P^T          left: P is rows x rank, R = P^T G
//   (std: right for a tall or square matrix, left for a wide one; reverse_std the other way);
//   Adam in the legacy Hugging Face form on R (low_rank.h), N = m / (sqrt(v) + eps), and the
//   scaling of the whole gradient by how much Adam changed R:
//     channel: s = ||N||_d / (||R||_d + 1e-8) along d = 1 for a tall matrix (one factor per row),
//              d = 0 for a wide one (one per column)
//     tensor:  s = ||N|| / (||R|| + 1e-8)      (APOLLO-Mini: rank 1, scale 128)
//   U = G s (times sqrt(scale) first, with scale_front); Fira's norm-growth limiter: after the
//   first step U /= max(||U|| / (n + 1e-8), 1.01) / 1.01 and n = ||U|| (divided the same way);
//   U times sqrt(scale) (without scale_front); W -= lr sqrt(1 - beta2^t) / (1 - beta1^t) U, then
//   W -= lr wd W (decoupled, after the update).
// Parameters that are not targeted take the legacy AdamW step unscaled. Channel scaling needs the
// projection on the side the factors run along (std's side): another proj_type is refused with it,
// where apollo-torch's shapes would not broadcast.
//
// State keys (see optimizer.h): exp_avg, exp_avg_sq (the low-rank shapes when targeted), ortho (P),
// seed (() int64: the next projection's), scaled_grad_norm (() float: the limiter's n); meta
// "steps" per parameter. A resumed run draws the same projections at the same steps.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "optim/optimizer.h"

namespace hftrain::optim {

struct ApolloSettings {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-6;
  int64_t rank = 128;
  int64_t update_proj_gap = 200;
  double scale = 1.0;
  config::ApolloScale scale_type = config::ApolloScale::kChannel;
  config::GaloreProjection proj_type = config::GaloreProjection::kStd;
  bool scale_front = false;
  bool norm_growth_limiter = true;
};

// `targeted`: one flag per parameter, in group order then parameter order; a targeted one must be
// 2-D. Throws util::ConfigError when the flags do not fit the groups, a flag marks a tensor that is
// not a matrix, or channel scaling meets a projection on the other side.
std::unique_ptr<Optimizer> make_apollo_adamw(std::vector<ParamGroup> groups, std::vector<bool> targeted,
                                             const ApolloSettings& settings);

// Which of `params` optimizer.apollo.target_modules targets (low_rank::matrix_targets).
std::vector<bool> apollo_targets(const std::vector<std::string>& globs, const NamedParams& params);

}  // namespace hftrain::optim
