// One block a row: the threads stride over the row's logits pushing them into per-thread online
// softmax statistics (kernels/classifier_math.h), merged by warp shuffles and then across warps
// through shared memory; thread 0 writes the row's loss; the second pass recomputes each
// exponential and writes the gradient. Each logit is read twice and each gradient written once:
// the ATen composite reads and writes a log-softmax buffer besides.
#include "kernels/fused_classifier.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "kernels/classifier_math.h"

namespace hftrain::kernels {
namespace {

constexpr int kThreads = 512;
constexpr int kWarps = kThreads / 32;

__device__ RowStats shuffle_merge(RowStats s) {
  for (int offset = 16; offset > 0; offset /= 2) {
    RowStats other{__shfl_xor_sync(0xffffffffu, s.max, offset), __shfl_xor_sync(0xffffffffu, s.sum, offset),
                   __shfl_xor_sync(0xffffffffu, s.total, offset)};
    s = row_stats_merge(s, other);
  }
  return s;
}

__global__ void __launch_bounds__(kThreads) classifier_kernel(const float* logits, int64_t row_stride,
                                                                const int64_t* targets, int64_t vocab,
                                                                float smoothing, float* row_losses, float* grad_f32,
                                                                __nv_bfloat16* grad_bf16) {
  __shared__ RowStats warp_stats[kWarps];
  __shared__ float row_lse;
  const int64_t row = blockIdx.x;
  const float* x = logits + row * row_stride;
  RowStats s = row_stats_empty();
  for (int64_t j = threadIdx.x; j < vocab; j += kThreads) s = row_stats_push(s, x[j]);
  s = shuffle_merge(s);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) warp_stats[warp] = s;
  __syncthreads();
  if (warp == 0) {
    s = lane < kWarps ? warp_stats[lane] : row_stats_empty();
    s = shuffle_merge(s);
    if (lane == 0) {
      const int64_t t = targets[row];
      row_losses[row] = row_loss(s, x[t], smoothing, vocab);
      row_lse = log_sum_exp(s);
    }
  }
  __syncthreads();
  if (!grad_f32 && !grad_bf16) return;
  const float lse = row_lse;
  const int64_t t = targets[row];
  for (int64_t j = threadIdx.x; j < vocab; j += kThreads) {
    const float g = logit_grad(x[j], lse, j == t, smoothing, vocab);
    if (grad_f32) grad_f32[row * row_stride + j] = g;
    if (grad_bf16) grad_bf16[row * row_stride + j] = __float2bfloat16(g);
  }
}

}  // namespace
}  // namespace hftrain::kernels

extern "C" int hftrain_fused_classifier(const float* logits, int64_t row_stride, const int64_t* targets, int64_t rows,
                                        int64_t vocab, float smoothing, float* row_losses, float* grad_f32,
                                        uint16_t* grad_bf16, void* stream) {
  if (rows <= 0) return 0;
  hftrain::kernels::classifier_kernel<<<static_cast<unsigned>(rows), hftrain::kernels::kThreads, 0,
                                        static_cast<cudaStream_t>(stream)>>>(
      logits, row_stride, targets, vocab, smoothing, row_losses, grad_f32,
      reinterpret_cast<__nv_bfloat16*>(grad_bf16));
  return static_cast<int>(cudaGetLastError());
}
