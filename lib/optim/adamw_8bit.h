// 8-bit AdamW with block-wise quantized moments (Dettmers et al., 2022, "8-bit Optimizers via
// Block-wise Quantization"), as bitsandbytes' bnb.optim.AdamW8bit (bitsandbytes 0.50) updates:
//   - each moment is kept as one uint8 code per element plus one fp32 absmax per block of
//     `block_size` consecutive elements (row-major order of the parameter); exp_avg's codes index
//     the signed dynamic map, exp_avg_sq's the unsigned one (bitsandbytes' create_dynamic_map);
//   - each step dequantizes both moments (code value x block absmax), updates in fp32 in the order
//     of bitsandbytes' optimizer_update_8bit_blockwise (its CPU implementation, "adam"):
//       m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g^2
//       p = p (1 - lr wd)                                  (when wd > 0: decoupled weight decay)
//       p = p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
//     then requantizes: absmax = max |x| of the block, code = the map's value nearest x / absmax
//     (a tie goes to the lower code; an all-zero block gets code 0 and absmax 0);
//   - parameters with fewer than `min_8bit_size` elements (bitsandbytes' default: 4096) keep fp32
//     moments and take bitsandbytes' 32-bit Adam update (optimizer_update_32bit), with
//     c1 = 1 - beta1^t, c2 = sqrt(1 - beta2^t):
//       p = p (1 - lr wd);  p = p - lr c2 / c1 * m / (sqrt(v) + eps c2)
// Under the ZeRO strategies the optimizer holds 1-D pieces of parameters, each starting on a block
// boundary (optim::state_blocks): its blocks are then the whole parameter's, and 8-bit or fp32
// moments are chosen by the whole parameter's size (ParamGroup::whole_numels), so the pieces step
// exactly as the whole parameter would.
// The arithmetic runs in fp32 whatever the parameter's dtype (bf16 and fp16 parameters are
// updated through an fp32 copy, as bitsandbytes does); the step count is kept per parameter.
//
// Differences from bitsandbytes, all small:
//   - block size: bitsandbytes quantizes optimizer state in blocks of 256 since 0.44 (its CUDA,
//     CPU and Triton kernels); the paper and earlier versions used 2048. The default here is 256,
//     as the bitsandbytes the tests compare with; 2048 is a setting away.
//   - rounding to the nearest code: bitsandbytes' CUDA kernels search the map exactly, as here; its
//     CPU build (0.50) looks codes up in a 65536-bin table over [-1, 1], which picks another code
//     for values within ~1.5e-5 (of the block's absmax) of a midpoint between codes, and for most
//     values below a few 1e-5, where the table's bins are wider than the map's codes are apart.
//   - bitsandbytes' CUDA optimizer kernel moves a first-moment code whose sign differs from the
//     value's (a tiny negative value rounded to +0) one code down, applies weight decay after the
//     Adam step instead of before, and skips elements whose gradient is NaN or infinite; here, as
//     in its CPU path, none of these.
//
// State keys (see optimizer.h), per parameter once it has stepped, and "steps" in meta:
//   8-bit (numel >= min_8bit_size): state1, state2 (uint8 codes of exp_avg and exp_avg_sq, the
//   parameter's shape), absmax1, absmax2 (fp32, one per block: ceil(numel / block_size));
//   fp32 (numel < min_8bit_size): exp_avg, exp_avg_sq (fp32, the parameter's shape).
// The names and layouts are bitsandbytes' own (its state dict keeps qmap1/qmap2 besides: the two
// maps, constants, not saved here). meta "optimizer" is "adamw_8bit"; "hyperparameters" records
// betas, eps, min_8bit_size and block_size. A state saved with another block size or
// min_8bit_size is refused (absmax of the wrong shape; state tensors these settings do not keep).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "optim/optimizer.h"

namespace hftrain::optim {

struct AdamW8bitSettings {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  int64_t min_8bit_size = 4096;  // smaller parameters keep fp32 moments (bitsandbytes' default)
  int64_t block_size = 256;      // elements per absmax (bitsandbytes 0.50; the paper: 2048)
};

// Throws std::invalid_argument for a block size below 1 or a negative min_8bit_size.
std::unique_ptr<Optimizer> make_adamw_8bit(std::vector<ParamGroup> groups,
                                           const AdamW8bitSettings& settings = {});

namespace detail {

// The block-wise 8-bit quantization behind make_adamw_8bit, exposed for its tests. Its code maps
// are peft::dynamic_map (peft/quantize.h), the one copy of bitsandbytes' create_dynamic_map.

// Quantizes the fp32 tensor `x` in blocks of `block_size` consecutive elements (row-major): codes
// (uint8, x's shape) index `map`'s nearest value to x / absmax, absmax (fp32, ceil(numel /
// block_size)) is each block's largest magnitude. On x's device (`map` is moved there).
struct Quantized8bit {
  torch::Tensor codes;
  torch::Tensor absmax;
};
Quantized8bit quantize_blockwise(const torch::Tensor& x, const torch::Tensor& map,
                                 int64_t block_size);

// map[codes] x absmax of the element's block, fp32 of codes' shape, on codes' device.
torch::Tensor dequantize_blockwise(const torch::Tensor& codes, const torch::Tensor& absmax,
                                   const torch::Tensor& map, int64_t block_size);

}  // namespace detail

}  // namespace hftrain::optim
