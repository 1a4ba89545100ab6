// Weight quantization for QLoRA and 8-bit states, value for value what bitsandbytes 0.50 computes
// (tests/fixtures/quantize, written by tests/conformance/gen_quantize_fixtures.py, come from it):
//   NF4             quantize_4bit(x, blocksize, quant_type="nf4", compress_statistics=...) and
//                   dequantize_4bit: 4-bit codes, one absmax per block, optionally double-quantized
//   blockwise 8-bit quantize_blockwise / dequantize_blockwise with create_dynamic_map's code
//   LLM.int8        int8_vectorwise_quant / int8_vectorwise_dequant (row-wise absmax, no outliers)
// Written with torch ops only, so CPU and CUDA tensors both work (results stay on the input's
// device). Bad input (not float32/float16/bfloat16, empty, NaN or infinity, a bad block size, a
// weight whose pieces do not fit together) throws util::DataError, never aborts.
//
// Rounding. bitsandbytes rounds differently per kernel:
//   - 4-bit (every CPU run): the scaled value goes to the nearest NF4 code; a value exactly on the
//     midpoint of two codes (computed in float32) goes to the LOWER code. Full blocks are scaled by
//     x * (1 / absmax), a ragged last block by x / absmax (bitsandbytes' PyTorch kernel does both).
//   - 8-bit on a CPU (libbitsandbytes_cpu, what quantize_blockwise and the nested absmax of NF4 run
//     there): NOT the nearest code. The scaled value is first binned into 65536 equal steps over
//     [-1, 1] (index = trunc(fma((v + 1) / 2, 65535, 0.5))) and the code nearest to the bin's value
//     is taken, so values within a bin share a code: near 0, where the dynamic map's codes lie
//     5e-7 to 1e-5 apart and a bin is 3e-5 wide, it lands up to 4 codes from the nearest one, and 0
//     itself does not map to the code 0. An all-zero block gets code index 0.
//     CodeRounding::kBitsandbytesCpu.
//   - 8-bit elsewhere (bitsandbytes' PyTorch reference kernel): the nearest code, ties to the lower
//     one, scaled as the 4-bit kernel scales. CodeRounding::kNearest.
// bitsandbytes' CUDA kernels (not checked here: no GPU in the fixtures) round to the nearest code
// too but scale every block, the ragged one included, by the reciprocal and break exact ties by
// their own search order; kNearest is the closer of the two modes to them.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include <torch/types.h>

namespace hftrain::peft {

// The 16 NF4 (4-bit NormalFloat) values, ascending from -1 to 1, as bitsandbytes'
// get_4bit_type("nf4") holds them (float32). Code i of a packed nibble means nf4_codebook()[i].
const std::array<float, 16>& nf4_codebook();

// bitsandbytes' create_dynamic_map(signed=is_signed) with its defaults (max_exponent_bits=7,
// total_bits=8): 256 float32 values, ascending, on the CPU. Signed: from -0.99297 to 1 (0 once, no
// -1); unsigned: from 0 to 1.
torch::Tensor dynamic_map(bool is_signed);

enum class CodeRounding {
  kBitsandbytesCpu,  // bitsandbytes' native CPU kernel, bit for bit (see the top of this file)
  kNearest,          // the nearest code, ties to the lower code (bitsandbytes' PyTorch kernel)
};

// Blockwise 8-bit quantization to a 256-entry code (a dynamic_map, or any ascending float32 code
// in [-1, 1]): each block of `block_size` consecutive elements (in row-major order; the last block
// may be shorter) is scaled by its absolute maximum into [-1, 1] and each value replaced by the
// index of a code value. bitsandbytes' quantize_blockwise(x, code, blocksize) layout.
struct Blockwise8bit {
  torch::Tensor codes;   // uint8, the input's shape: indices into the code
  torch::Tensor absmax;  // float32 [ceil(numel / block_size)]: each block's max |x| (kNearest: a
                         // ragged last block's is clamped to at least 1e-38, as bitsandbytes does)
  int64_t block_size = 0;
  std::vector<int64_t> shape;  // the input's shape
};

// Any block size > 0. `code`: 256 ascending float32 values (any device; moved to x's).
Blockwise8bit quantize_blockwise(const torch::Tensor& x, const torch::Tensor& code,
                                 int64_t block_size,
                                 CodeRounding rounding = CodeRounding::kBitsandbytesCpu);
// code[codes] * absmax (float32), converted to `dtype`; q.shape, on q.codes' device.
torch::Tensor dequantize_blockwise(const Blockwise8bit& q, const torch::Tensor& code,
                                   torch::ScalarType dtype = torch::kFloat32);

// An NF4 weight: bitsandbytes' quantize_4bit(x, blocksize, quant_type="nf4",
// compress_statistics=double_quant) output and QuantState, field for field. With double_quant the
// per-block absmax is itself quantized (QLoRA's double quantization): its mean is subtracted and
// the rest quantized blockwise to 8 bits with dynamic_map(true) in blocks of 256.
struct Nf4Weight {
  // uint8 [(numel + 1) / 2, 1] (bitsandbytes' shape): the elements in row-major order, two per
  // byte, element 2i in the HIGH nibble of byte i and 2i+1 in the low one. An odd count pads the
  // last low nibble with code 7 (the value 0).
  torch::Tensor packed;
  std::vector<int64_t> shape;                 // the weight's shape (QuantState.shape)
  torch::ScalarType dtype = torch::kFloat32;  // the weight's dtype (QuantState.dtype)
  int64_t block_size = 64;                    // elements per absmax (QuantState.blocksize)
  bool double_quant = true;                   // QuantState.nested
  // Without double_quant: float32 [ceil(numel / block_size)], each block's max |x| (a ragged last
  // block's clamped to at least 1e-38). Undefined with double_quant.
  torch::Tensor absmax;
  // With double_quant (undefined without): the per-block absmax minus absmax_offset, quantized.
  torch::Tensor absmax_codes;       // uint8 [blocks]: QuantState.absmax (nested "absmax")
  torch::Tensor absmax_scales;      // float32 [ceil(blocks / 256)]: state2.absmax ("nested_absmax")
  torch::Tensor absmax_code_map;    // float32 [256]: state2.code = dynamic_map(true)
                                    // ("nested_quant_map"), on the weight's device
  float absmax_offset = 0;          // the absmax's mean (QuantState.offset, "nested_offset")
  int64_t absmax_block_size = 256;  // state2.blocksize ("nested_blocksize")
};

// block_size: one of bitsandbytes' 32, 64, 128, 256, 512, 1024, 2048, 4096. `nested_rounding`
// rounds the double quantization (the 4-bit codes do not depend on it).
Nf4Weight quantize_nf4(const torch::Tensor& weight, int64_t block_size = 64,
                       bool double_quant = true,
                       CodeRounding nested_rounding = CodeRounding::kBitsandbytesCpu);
// nf4_codebook()[code] * absmax of its block (float32), converted to `dtype`; the weight's shape,
// on w.packed's device.
torch::Tensor dequantize_nf4(const Nf4Weight& w, torch::ScalarType dtype = torch::kFloat32);
// The per-block absmax dequantize_nf4 multiplies by: w.absmax, or with double_quant
// absmax_code_map[absmax_codes] * absmax_scales + absmax_offset (float32, as bitsandbytes).
torch::Tensor nf4_absmax(const Nf4Weight& w);

// An LLM.int8 weight: bitsandbytes' int8_vectorwise_quant(w) (threshold 0: no outlier columns),
// the layout of Int8Params' CB and SCB.
struct Int8Weight {
  torch::Tensor codes;       // int8 [rows, cols]: round(w * (127 / row_absmax)), half to even;
                             // 0 for a row of zeros
  torch::Tensor row_absmax;  // float32 [rows]: each row's max |w| (SCB). Not divided by 127:
                             // dequantization multiplies by it and then by 1/127.
};

// w: 2-D [rows, cols] (out_features x in_features), float32, float16 or bfloat16.
Int8Weight quantize_int8_rowwise(const torch::Tensor& w);
// codes * row_absmax * 7.874015718698502e-3 (1/127, float32), converted to `dtype`.
torch::Tensor dequantize_int8_rowwise(const Int8Weight& w,
                                      torch::ScalarType dtype = torch::kFloat32);

}  // namespace hftrain::peft
