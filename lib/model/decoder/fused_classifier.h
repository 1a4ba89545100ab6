// The output layer's per-chunk classifier: from fp32 logits (rows, V) and targets, each row's
// cross-entropy (label smoothing s) and d loss / d logits = softmax - (1 - s) onehot - s / V. The
// composite is ATen's log-softmax and friends (three passes over the logits and a log-softmax
// buffer); on CUDA, where lib/kernels was built, one kernel reads each logit twice and writes its
// gradient once (kernels/fused_classifier.cu). The composite is the CPU path, the fallback and the
// tests' oracle.
#pragma once

#include <torch/types.h>

namespace hftrain::model {

// Row losses (rows) fp32, and, when `grad` is defined ((rows, V) fp32 or bf16, contiguous rows,
// possibly the logits' own storage when fp32), the gradient written into it. `targets` (rows)
// int64 in [0, V) (ignored rows: any valid index; the caller masks them).
torch::Tensor classifier_composite(const torch::Tensor& logits, const torch::Tensor& targets, double smoothing,
                                   const torch::Tensor& grad);
// The same through the CUDA kernel; false (nothing written) where it does not apply: no kernels
// built, not CUDA, a dtype or layout it does not take.
bool classifier_fused(const torch::Tensor& logits, const torch::Tensor& targets, double smoothing,
                      const torch::Tensor& grad, torch::Tensor& row_losses);
// Whether this build has the kernel (lib/kernels compiled by nvcc).
bool fused_classifier_built();
// Whether the output layer uses it: built, and HFTRAIN_FUSED_CLASSIFIER=1 (off by default until a
// GPU window has held it against the composite and measured it).
bool fused_classifier_enabled();

}  // namespace hftrain::model
