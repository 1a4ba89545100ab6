// Muon (Keller Jordan et al., 2024, "Muon: An optimizer for hidden layers in neural networks"), as
// torch.optim.Muon (PyTorch 2.9+) computes it, for the hidden weight matrices; AdamW (ATen's fused
// kernel, fused_adamw.h) for every other parameter, as Muon is meant to be paired. For a matrix W
// with gradient G and momentum buffer B (zeros at first), at the group's lr and weight decay wd:
//   B = B + (1 - mu) (G - B)                      (torch's lerp: an average, not B = mu B + G)
//   U = nesterov ? G + mu (B - G) : B
//   O = NS(U): ns_steps quintic Newton-Schulz iterations in bf16 on the wide orientation of U,
//       X = U / max(||U||_F, eps);  A = X X^T;  X = a X + (b A + c A A) X;  (a, b, c) = (3.4445, -4.7750, 2.0315)
//   W = W (1 - lr wd) - lr' O,  lr' = lr sqrt(max(1, rows / cols))  (adjust_lr original)
//                                   = 0.2 lr sqrt(max(rows, cols))   (adjust_lr match_rms_adamw)
// A parameter that holds several of the reference model's matrices stacked by rows (hftrain's fused
// qkv_proj and gate_up_proj hold Hugging Face's q/k/v and gate/up projections) is orthogonalised
// part by part, each with its own lr', so that the update equals torch.optim.Muon over the
// transformers model. A matrix stored transposed (GPT-2's Conv1D weights, kept as linear ones)
// reads rows and cols as the reference model's tensor has them.
//
// State keys (see optimizer.h): momentum_buffer for a Muon matrix; exp_avg and exp_avg_sq for the
// AdamW parameters; meta "steps" counts every parameter's steps.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "optim/optimizer.h"

namespace hftrain::optim {

// Parameter name -> its matrices (optimizer.h), for every parameter Muon updates; the others take
// AdamW steps.
using MuonMatrices = ModelMatrices;

struct MuonSettings {
  double momentum = 0.95;
  bool nesterov = true;
  int64_t ns_steps = 5;
  double eps = 1e-7;
  config::MuonAdjustLr adjust_lr = config::MuonAdjustLr::kOriginal;
  // AdamW's, for the other parameters
  double beta1 = 0.9;
  double beta2 = 0.999;
  double adam_eps = 1e-8;
};

// Throws util::ConfigError when a name in `matrices` is not a 2-D parameter of the groups, or its
// parts do not sum to its rows.
std::unique_ptr<Optimizer> make_muon(std::vector<ParamGroup> groups, const MuonMatrices& matrices,
                                     const MuonSettings& settings);

// The matrices of optimizer.muon.params: the 2-D parameters whose name matches a glob, each taken
// whole unless `layout` (the model's hidden weight matrices) cuts it in parts. With no globs, the
// parameters of `layout`. Throws util::ConfigError when a glob matches no parameter or a
// parameter that is not a matrix, or nothing would be updated by Muon.
MuonMatrices muon_targets(const std::vector<std::string>& globs, const NamedParams& params,
                          const ModelMatrices& layout);

// NS(U) above: the orthogonalised update in bf16, U's shape, computed on a contiguous copy of U.
torch::Tensor newton_schulz(const torch::Tensor& update, int64_t steps, double eps);

}  // namespace hftrain::optim
