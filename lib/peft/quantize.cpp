#include "peft/quantize.h"

#include <algorithm>
#include <string>

#include <torch/torch.h>

#include "util/error.h"

namespace hftrain::peft {
namespace {

using util::DataError;

constexpr int64_t kCodeSize = 256;                // entries of an 8-bit code
constexpr int64_t kLutSize = 65536;               // bins of bitsandbytes' CPU kernel
constexpr int64_t kNestedBlockSize = 256;         // blocks of NF4's double quantization
constexpr double kMinAbsmax = 1e-38;              // bitsandbytes' clamp (a float32 subnormal)
constexpr double kInv127 = 7.874015718698502e-3;  // bitsandbytes' 1/127 in int8 dequantization

std::string dtype_name(torch::ScalarType t) {
  return c10::toString(t);
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

int64_t numel_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// The input checks every quantizer shares: a float32/float16/bfloat16 tensor (what bitsandbytes
// quantizes), not empty. (Finite: check_finite on the absmax, see there.)
void check_quantizable(const torch::Tensor& x, const std::string& what) {
  if (!x.defined()) throw DataError(what + ": no tensor given");
  const auto t = x.scalar_type();
  if (t != torch::kFloat32 && t != torch::kFloat16 && t != torch::kBFloat16) {
    throw DataError(what + ": cannot quantize a tensor of dtype " + dtype_name(t),
                    "only float32, float16 and bfloat16 tensors are quantized (as bitsandbytes "
                    "does); convert the tensor first");
  }
  if (x.numel() == 0) throw DataError(what + ": cannot quantize an empty tensor");
}

// NaN and infinity (bitsandbytes makes meaningless codes of them) reach the max of |x| of their
// block or row: checking the absmax is checking the tensor, at a fraction of the cost.
void check_finite(const torch::Tensor& absmax, const std::string& what) {
  if (!torch::isfinite(absmax).all().item<bool>()) {
    throw DataError(what + ": the tensor holds NaN or infinity", "check the weights' source");
  }
}

void check_output_dtype(torch::ScalarType t, const std::string& what) {
  if (!torch::isFloatingType(t)) {
    throw DataError(what + ": cannot dequantize to dtype " + dtype_name(t),
                    "ask for a floating-point dtype");
  }
}

void check_piece(const torch::Tensor& t, torch::ScalarType dtype, int64_t numel,
                 const std::string& what, const std::string& piece) {
  if (!t.defined()) throw DataError(what + ": " + piece + " is missing");
  if (t.scalar_type() != dtype || t.numel() != numel) {
    throw DataError(what + ": " + piece + " is " + dtype_name(t.scalar_type()) + " with " +
                        std::to_string(t.numel()) + " elements; expected " + dtype_name(dtype) +
                        " with " + std::to_string(numel),
                    "the quantized weight is damaged or was made with other parameters");
  }
}

// A 256-entry float32 code, ascending (bitsandbytes' kernels assume it), as a CPU tensor.
torch::Tensor checked_code(const torch::Tensor& code, const std::string& what) {
  if (!code.defined() || code.scalar_type() != torch::kFloat32 || code.dim() != 1 ||
      code.size(0) != kCodeSize) {
    throw DataError(what + ": the code must be a 1-D float32 tensor of 256 values",
                    "use dynamic_map(true) or dynamic_map(false)");
  }
  auto c = code.to(torch::kCPU).contiguous();
  if (!torch::isfinite(c).all().item<bool>() ||
      (c.slice(0, 1) < c.slice(0, 0, kCodeSize - 1)).any().item<bool>()) {
    throw DataError(what + ": the code must be finite and ascending");
  }
  return c;
}

// Midpoints between neighbouring code values, in float32 (a value on one rounds to the lower).
torch::Tensor midpoints(const torch::Tensor& code) {
  return (code.slice(0, 0, code.size(0) - 1) + code.slice(0, 1)) * 0.5;
}

// The elements as float32 [blocks, block_size] rows, the last row zero-padded when ragged.
torch::Tensor block_rows(const torch::Tensor& x, int64_t block_size) {
  auto flat = x.reshape(-1).to(torch::kFloat32);
  const int64_t n = flat.numel();
  const int64_t blocks = ceil_div(n, block_size);
  if (blocks * block_size != n) flat = torch::constant_pad_nd(flat, {0, blocks * block_size - n});
  return flat.view({blocks, block_size});
}

// bitsandbytes' PyTorch kernels (4-bit, and 8-bit kNearest): full blocks scaled by
// x * (1 / max(absmax, 1e-38)), a ragged last block by x / max(absmax, 1e-38) with that clamped
// absmax stored; then clamped to [-1, 1]. Returns the scaled rows; `absmax` is updated in place.
torch::Tensor scale_reference(const torch::Tensor& rows, torch::Tensor& absmax, int64_t n) {
  const int64_t blocks = rows.size(0);
  const int64_t block_size = rows.size(1);
  const bool ragged = blocks * block_size != n;
  const int64_t full = ragged ? blocks - 1 : blocks;
  std::vector<torch::Tensor> parts;
  if (full > 0) {
    auto inv = absmax.slice(0, 0, full).clamp_min(kMinAbsmax).reciprocal();
    parts.push_back(rows.slice(0, 0, full) * inv.unsqueeze(1));
  }
  if (ragged) {
    auto last = absmax.slice(0, full).clamp_min(kMinAbsmax);
    absmax = torch::cat({absmax.slice(0, 0, full), last});
    parts.push_back(rows.slice(0, full) / last.unsqueeze(1));
  }
  return torch::cat(parts).clamp(-1.0, 1.0);
}

// bitsandbytes' CPU kernel: a table from 65536 bins over [-1, 1] (bin k holds the float32 value
// 2k / 65535 - 1) to the code nearest that value (ties to the lower), on the CPU.
torch::Tensor cpu_kernel_table(const torch::Tensor& code_cpu) {
  auto bins = torch::arange(kLutSize, torch::kFloat32) * 2.0 / static_cast<double>(kLutSize - 1);
  return torch::bucketize(bins - 1.0, midpoints(code_cpu), /*out_int32=*/true);
}

// Code indices of the rows as bitsandbytes' CPU kernel computes them: v = x * (1 / absmax),
// clamped to [-1, 1]; bin = trunc(fma((v + 1) * 0.5, 65535, 0.5)); code = table[bin]; an all-zero
// block is all code 0. The library fuses the multiply-add; rounding twice here gives the same bin
// for every t = (v + 1) * 0.5 a float32 v can give (all multiples of 2^-25 in [0, 1], checked
// exhaustively), so the float32 ops below are exact on any device.
torch::Tensor codes_cpu_kernel(const torch::Tensor& rows, const torch::Tensor& absmax,
                               const torch::Tensor& code_cpu) {
  auto zero = absmax == 0;
  auto inv = torch::where(zero, torch::zeros_like(absmax), absmax.reciprocal());
  auto v = (rows * inv.unsqueeze(1)).clamp(-1.0, 1.0);
  auto t = (v + 1.0) * 0.5;
  auto bin = (t * static_cast<double>(kLutSize - 1) + 0.5).to(torch::kInt64);
  auto table = cpu_kernel_table(code_cpu).to(rows.device());
  auto idx = table.index({bin});
  return torch::where(zero.unsqueeze(1), torch::zeros_like(idx), idx);
}

// Code value times its block's absmax (float32), the padding of a ragged block cut off.
torch::Tensor scale_back(const torch::Tensor& values, const torch::Tensor& absmax,
                         int64_t block_size, int64_t n) {
  const int64_t blocks = absmax.numel();
  auto v = values;
  if (blocks * block_size != n) v = torch::constant_pad_nd(v, {0, blocks * block_size - n});
  return (v.view({blocks, block_size}) * absmax.view({blocks, 1})).reshape(-1).slice(0, 0, n);
}

torch::Tensor nf4_tensor(const torch::Device& device) {
  const auto& c = nf4_codebook();
  return torch::tensor(std::vector<float>(c.begin(), c.end()), torch::kFloat32).to(device);
}

// [256, 2]: row b holds the NF4 values of byte b's high and low nibble (one gather per byte).
torch::Tensor nf4_byte_table(const torch::Device& device) {
  auto c = nf4_tensor(torch::kCPU);
  return torch::stack({c.repeat_interleave(16), c.repeat({16})}, 1).to(device);
}

}  // namespace

const std::array<float, 16>& nf4_codebook() {
  // bitsandbytes' get_4bit_type("nf4"): create_normal_map(offset=0.9677083, use_extra_value=True),
  // the float32 values it hard-codes.
  static const std::array<float, 16> kNf4 = {
      -1.0f,
      -0.6961928009986877f,
      -0.5250730514526367f,
      -0.39491748809814453f,
      -0.28444138169288635f,
      -0.18477343022823334f,
      -0.09105003625154495f,
      0.0f,
      0.07958029955625534f,
      0.16093020141124725f,
      0.24611230194568634f,
      0.33791524171829224f,
      0.44070982933044434f,
      0.5626170039176941f,
      0.7229568362236023f,
      1.0f,
  };
  return kNf4;
}

torch::Tensor dynamic_map(bool is_signed) {
  // Exponent e = 0..6 contributes the midpoints of a linspace(0.1, 1) of 2^e + 1 points (signed;
  // unsigned: 2^(e+1) + 1) times 10^(e-6), and signed also their negatives; then 0 and 1. All in
  // float32 (the scale is rounded to float32 first, as PyTorch does for a Python scalar).
  static constexpr double kScale[7] = {1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0};
  std::vector<float> values;
  values.reserve(kCodeSize);
  for (int e = 0; e < 7; ++e) {
    const int64_t points = (int64_t{1} << (is_signed ? e : e + 1)) + 1;
    auto bounds = torch::linspace(0.1, 1.0, points, torch::kFloat32);
    auto means = (bounds.slice(0, 0, points - 1) + bounds.slice(0, 1)) / 2.0;
    for (double sign : {1.0, -1.0}) {
      if (sign < 0 && !is_signed) break;
      auto scaled = (means * (sign * kScale[e])).contiguous();
      const float* p = scaled.data_ptr<float>();
      values.insert(values.end(), p, p + scaled.numel());
    }
  }
  values.push_back(0.0f);
  values.push_back(1.0f);
  std::sort(values.begin(), values.end());
  return torch::tensor(values, torch::kFloat32);
}

Blockwise8bit quantize_blockwise(const torch::Tensor& x, const torch::Tensor& code,
                                 int64_t block_size, CodeRounding rounding) {
  const std::string what = "quantize_blockwise";
  check_quantizable(x, what);
  if (block_size <= 0) {
    throw DataError(what + ": block size " + std::to_string(block_size) + " is not positive");
  }
  auto code_cpu = checked_code(code, what);
  const int64_t n = x.numel();
  auto rows = block_rows(x, block_size);
  auto absmax = rows.abs().amax(1);
  check_finite(absmax, what);
  torch::Tensor idx;
  if (rounding == CodeRounding::kBitsandbytesCpu) {
    idx = codes_cpu_kernel(rows, absmax, code_cpu);
  } else {
    auto scaled = scale_reference(rows, absmax, n);
    idx = torch::bucketize(scaled, midpoints(code_cpu).to(x.device()), /*out_int32=*/true);
  }
  Blockwise8bit q;
  q.codes = idx.reshape(-1).slice(0, 0, n).to(torch::kUInt8).reshape(x.sizes());
  q.absmax = absmax;
  q.block_size = block_size;
  q.shape = x.sizes().vec();
  return q;
}

torch::Tensor dequantize_blockwise(const Blockwise8bit& q, const torch::Tensor& code,
                                   torch::ScalarType dtype) {
  const std::string what = "dequantize_blockwise";
  check_output_dtype(dtype, what);
  if (q.block_size <= 0) {
    throw DataError(what + ": block size " + std::to_string(q.block_size) + " is not positive");
  }
  const int64_t n = numel_of(q.shape);
  check_piece(q.codes, torch::kUInt8, n, what, "the codes");
  check_piece(q.absmax, torch::kFloat32, ceil_div(n, q.block_size), what, "the absmax");
  auto code_dev = checked_code(code, what).to(q.codes.device());
  auto values = code_dev.index_select(0, q.codes.reshape(-1).to(torch::kInt32));
  return scale_back(values, q.absmax.to(q.codes.device()), q.block_size, n)
      .to(dtype)
      .reshape(q.shape);
}

Nf4Weight quantize_nf4(const torch::Tensor& weight, int64_t block_size, bool double_quant,
                       CodeRounding nested_rounding) {
  const std::string what = "quantize_nf4";
  check_quantizable(weight, what);
  static constexpr int64_t kSizes[] = {32, 64, 128, 256, 512, 1024, 2048, 4096};
  if (std::find(std::begin(kSizes), std::end(kSizes), block_size) == std::end(kSizes)) {
    throw DataError(what + ": block size " + std::to_string(block_size) + " is not supported",
                    "use 32, 64, 128, 256, 512, 1024, 2048 or 4096 (bitsandbytes' sizes)");
  }
  const int64_t n = weight.numel();
  auto rows = block_rows(weight, block_size);
  auto absmax = rows.abs().amax(1);
  check_finite(absmax, what);
  auto scaled = scale_reference(rows, absmax, n).reshape(-1).slice(0, 0, n);
  if (n % 2 != 0) scaled = torch::constant_pad_nd(scaled, {0, 1});  // the value 0: code 7
  auto mid = midpoints(nf4_tensor(torch::kCPU)).to(weight.device());
  auto q = torch::bucketize(scaled, mid, /*out_int32=*/true).to(torch::kUInt8).view({-1, 2});
  Nf4Weight w;
  w.packed =
      torch::bitwise_or(torch::bitwise_left_shift(q.select(1, 0), 4), q.select(1, 1)).unsqueeze(1);
  w.shape = weight.sizes().vec();
  w.dtype = weight.scalar_type();
  w.block_size = block_size;
  w.double_quant = double_quant;
  if (!double_quant) {
    w.absmax = absmax;
    return w;
  }
  auto offset = absmax.mean();
  auto nested =
      quantize_blockwise(absmax - offset, dynamic_map(true), kNestedBlockSize, nested_rounding);
  w.absmax_codes = nested.codes;
  w.absmax_scales = nested.absmax;
  w.absmax_code_map = dynamic_map(true).to(weight.device());
  w.absmax_offset = offset.item<float>();
  w.absmax_block_size = kNestedBlockSize;
  return w;
}

torch::Tensor nf4_absmax(const Nf4Weight& w) {
  const std::string what = "nf4_absmax";
  if (w.block_size <= 0) {
    throw DataError(what + ": block size " + std::to_string(w.block_size) + " is not positive");
  }
  const int64_t blocks = ceil_div(numel_of(w.shape), w.block_size);
  if (!w.double_quant) {
    check_piece(w.absmax, torch::kFloat32, blocks, what, "the absmax");
    return w.absmax;
  }
  if (w.absmax_block_size <= 0) {
    throw DataError(what + ": nested block size " + std::to_string(w.absmax_block_size) +
                    " is not positive");
  }
  Blockwise8bit nested{w.absmax_codes, w.absmax_scales, w.absmax_block_size, {blocks}};
  return dequantize_blockwise(nested, w.absmax_code_map) + static_cast<double>(w.absmax_offset);
}

torch::Tensor dequantize_nf4(const Nf4Weight& w, torch::ScalarType dtype) {
  const std::string what = "dequantize_nf4";
  check_output_dtype(dtype, what);
  for (int64_t d : w.shape) {
    if (d < 0) throw DataError(what + ": bad shape " + shape_string(w.shape));
  }
  const int64_t n = numel_of(w.shape);
  check_piece(w.packed, torch::kUInt8, (n + 1) / 2, what,
              "the packed codes of a weight of shape " + shape_string(w.shape));
  auto absmax = nf4_absmax(w).to(w.packed.device());
  auto bytes = w.packed.reshape(-1).to(torch::kInt32);
  auto values = nf4_byte_table(w.packed.device()).index_select(0, bytes).reshape(-1).slice(0, 0, n);
  return scale_back(values, absmax, w.block_size, n).to(dtype).reshape(w.shape);
}

Int8Weight quantize_int8_rowwise(const torch::Tensor& w) {
  const std::string what = "quantize_int8_rowwise";
  check_quantizable(w, what);
  if (w.dim() != 2) {
    throw DataError(what + ": the weight has shape " + shape_string(w.sizes().vec()) +
                        "; expected 2-D [rows, cols]",
                    "reshape it to [out_features, in_features]");
  }
  Int8Weight q;
  q.row_absmax = w.abs().amax(1).to(torch::kFloat32);
  check_finite(q.row_absmax, what);
  auto zero = (q.row_absmax == 0).unsqueeze(1);
  // bitsandbytes: round(w * (127 / absmax)), 127 / absmax computed as reciprocal(absmax) * 127.
  auto scale = q.row_absmax.reciprocal().unsqueeze(1) * 127.0;
  // One temporary of the weight's size (a layer of a QLoRA base is quantized as it is read).
  auto scaled = w * scale;
  scaled.round_();                 // half to even; NaN (0 * inf) in a zero row
  scaled.masked_fill_(zero, 0.0);  // a zero row's codes are 0
  q.codes = scaled.to(torch::kInt8);
  return q;
}

torch::Tensor dequantize_int8_rowwise(const Int8Weight& w, torch::ScalarType dtype) {
  const std::string what = "dequantize_int8_rowwise";
  check_output_dtype(dtype, what);
  if (!w.codes.defined() || w.codes.scalar_type() != torch::kInt8 || w.codes.dim() != 2) {
    throw DataError(what + ": the codes must be a 2-D int8 tensor");
  }
  check_piece(w.row_absmax, torch::kFloat32, w.codes.size(0), what, "the row absmax");
  auto stats = w.row_absmax.to(w.codes.device()).view({-1, 1});
  // (codes * stats) * (1/127) in float32 as bitsandbytes evaluates it, in one buffer: QLoRA
  // dequantizes a layer for every product.
  auto out = w.codes.to(torch::kFloat32);
  out.mul_(stats).mul_(kInv127);
  return out.to(dtype);
}

}  // namespace hftrain::peft
