// Products of low-precision (bf16 or fp16) matrices written into fp32 tensors, for the output
// layer (model/decoder/lm_head_loss): on CUDA one cuBLAS call each (ATen's mm.dtype_out and
// addmm.dtype_out: fp32 accumulation and an fp32 result), instead of a low-precision result, a
// copy (or a mixed-dtype add) over it, and its rounding. Elsewhere, and on a CUDA build whose
// kernels refuse or mis-compute (checked once per process on a tiny product), the low-precision
// product and the copy or the add: on the CPU the results are as before, bit for bit.
#pragma once

#include <torch/types.h>

namespace hftrain::model {

// out (fp32) = a @ b.
void mm_into(torch::Tensor& out, const torch::Tensor& a, const torch::Tensor& b);
// acc (fp32) += a @ b, in place.
void addmm_into(torch::Tensor& acc, const torch::Tensor& a, const torch::Tensor& b);
// Whether the one-call path is taken on `device` (false on the CPU).
bool fp32_output_products(const torch::Device& device);

}  // namespace hftrain::model
