// The per-element math of the fused classifier (kernels/fused_classifier.cu), shared by the CUDA
// kernel and the CPU tests that hold it against ATen: an online softmax over a row of logits
// (the running maximum and the sum of exponentials below it, merged pairwise as threads and warps
// combine), the row's cross-entropy with label smoothing, and each logit's gradient. Plain C++ with
// CUDA qualifiers where nvcc compiles it; no torch headers.
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define HFTRAIN_HD __host__ __device__ __forceinline__
#else
#define HFTRAIN_HD inline
#endif

namespace hftrain::kernels {

// max: the largest logit seen; sum: the sum of exp(x - max) over them; total: the sum of the
// logits themselves (label smoothing's uniform term). Empty: max -inf, sums 0.
struct RowStats {
  float max;
  float sum;
  float total;
};

HFTRAIN_HD RowStats row_stats_empty() { return {-INFINITY, 0.0f, 0.0f}; }

HFTRAIN_HD RowStats row_stats_push(RowStats a, float x) {
  if (x > a.max) {
    a.sum = a.sum * expf(a.max - x) + 1.0f;  // exp(-inf) = 0 for the first logit
    a.max = x;
  } else {
    a.sum += expf(x - a.max);
  }
  a.total += x;
  return a;
}

HFTRAIN_HD RowStats row_stats_merge(RowStats a, RowStats b) {
  if (b.max == -INFINITY) return {a.max, a.sum, a.total + b.total};
  if (a.max == -INFINITY) return {b.max, b.sum, a.total + b.total};
  const float m = a.max > b.max ? a.max : b.max;
  return {m, a.sum * expf(a.max - m) + b.sum * expf(b.max - m), a.total + b.total};
}

// log(sum_j exp(x_j)).
HFTRAIN_HD float log_sum_exp(RowStats s) { return s.max + logf(s.sum); }

// The row's loss for target t with label smoothing s over V classes, as PyTorch's cross_entropy:
//   (1 - s) * (lse - x_t) + s / V * sum_j (lse - x_j) = lse - (1 - s) x_t - s / V * total.
HFTRAIN_HD float row_loss(RowStats st, float x_target, float smoothing, int64_t vocab) {
  return log_sum_exp(st) - (1.0f - smoothing) * x_target - smoothing / static_cast<float>(vocab) * st.total;
}

// d loss / d x_j = softmax_j - (1 - s) [j == t] - s / V, formed in fp32 (the target's difference
// before any rounding to a narrower output).
HFTRAIN_HD float logit_grad(float x, float lse, bool is_target, float smoothing, int64_t vocab) {
  return expf(x - lse) - (is_target ? 1.0f - smoothing : 0.0f) - smoothing / static_cast<float>(vocab);
}

}  // namespace hftrain::kernels
