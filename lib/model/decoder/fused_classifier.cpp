#include "model/decoder/fused_classifier.h"

#include <optional>
#include <stdexcept>
#include <string>

#include <torch/torch.h>

#ifdef HFTRAIN_HAVE_KERNELS
#include <ATen/cuda/CUDAContext.h>

#include "kernels/fused_classifier.h"
#endif

#include "util/env.h"

namespace hftrain::model {

torch::Tensor classifier_composite(const torch::Tensor& logits, const torch::Tensor& targets, double smoothing,
                                   const torch::Tensor& grad) {
  const int64_t vocab = logits.size(1);
  const torch::Tensor lp = torch::log_softmax(logits, 1);
  const torch::Tensor t = targets.unsqueeze(1);
  torch::Tensor loss = lp.gather(1, t).squeeze(1).neg().mul(1.0 - smoothing);
  if (smoothing > 0) loss = loss - lp.sum(1) * (smoothing / static_cast<double>(vocab));
  if (grad.defined()) {
    torch::Tensor g = lp.exp();
    g.scatter_add_(1, t, torch::full({logits.size(0), 1}, -(1.0 - smoothing), g.options()));
    if (smoothing > 0) g.sub_(smoothing / static_cast<double>(vocab));
    torch::Tensor(grad).copy_(g);
  }
  return loss;
}

bool fused_classifier_built() {
#ifdef HFTRAIN_HAVE_KERNELS
  return true;
#else
  return false;
#endif
}

bool fused_classifier_enabled() {
  // Read once: the process's setting, as HFTRAIN_LM_HEAD_CHUNK_ROWS is.
  static const bool asked = [] {
    const std::optional<std::string> v = util::Environment::process().get("HFTRAIN_FUSED_CLASSIFIER");
    return v && *v == "1";
  }();
  return asked && fused_classifier_built();
}

bool classifier_fused(const torch::Tensor& logits, const torch::Tensor& targets, double smoothing,
                      const torch::Tensor& grad, torch::Tensor& row_losses) {
#ifdef HFTRAIN_HAVE_KERNELS
  if (!logits.is_cuda() || logits.scalar_type() != torch::kFloat32 || logits.dim() != 2 ||
      logits.stride(1) != 1 || targets.scalar_type() != torch::kInt64 || !targets.is_contiguous()) {
    return false;
  }
  if (grad.defined() && (grad.stride(1) != 1 || grad.stride(0) != logits.stride(0) ||
                         (grad.scalar_type() != torch::kFloat32 && grad.scalar_type() != torch::kBFloat16))) {
    return false;
  }
  row_losses = torch::empty({logits.size(0)}, logits.options());
  float* grad_f32 = grad.defined() && grad.scalar_type() == torch::kFloat32 ? grad.data_ptr<float>() : nullptr;
  auto* grad_bf16 = grad.defined() && grad.scalar_type() == torch::kBFloat16
                        ? reinterpret_cast<uint16_t*>(grad.data_ptr<c10::BFloat16>())
                        : nullptr;
  const int err = hftrain_fused_classifier(logits.data_ptr<float>(), logits.stride(0), targets.data_ptr<int64_t>(),
                                           logits.size(0), logits.size(1), static_cast<float>(smoothing),
                                           row_losses.data_ptr<float>(), grad_f32, grad_bf16,
                                           at::cuda::getCurrentCUDAStream().stream());
  if (err != 0) {
    throw std::runtime_error("the fused classifier kernel failed to launch (CUDA error " + std::to_string(err) +
                             "); unset HFTRAIN_FUSED_CLASSIFIER to use the ATen path");
  }
  return true;
#else
  (void)logits, (void)targets, (void)smoothing, (void)grad, (void)row_losses;
  return false;
#endif
}

}  // namespace hftrain::model
