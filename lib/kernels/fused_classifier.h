// The fused classifier's C interface (kernels/fused_classifier.cu, built by nvcc where the CUDA
// toolkit is present): for each row of fp32 logits, one pass for the online softmax statistics and
// the row's loss, one pass writing every logit's gradient (fp32 or bf16) in place of or beside the
// logits, as llm.c's fused classifier and Liger's cross-entropy do. Pointers on the device; no torch
// types, so nvcc compiles it without LibTorch's headers. model/decoder/fused_classifier wraps it for ATen
// tensors, with its ATen composite as the fallback and the oracle.
#pragma once

#include <cstdint>

extern "C" {

// Returns 0, or the cudaError_t of the launch.
//   logits       (rows, row_stride) fp32, the first `vocab` of each row used
//   targets      (rows) int64 in [0, vocab)
//   row_losses   (rows) fp32 out: each row's loss (label smoothing `smoothing`)
//   grad_f32     (rows, row_stride) fp32 out, or null; may alias `logits`
//   grad_bf16    (rows, row_stride) bf16 out (uint16 bits), or null
//   stream       a cudaStream_t
int hftrain_fused_classifier(const float* logits, int64_t row_stride, const int64_t* targets, int64_t rows,
                             int64_t vocab, float smoothing, float* row_losses, float* grad_f32, uint16_t* grad_bf16,
                             void* stream);
}
