#include "metrics/mfu.h"

#include <cctype>
#include <cmath>
#include <string>

#include "util/log.h"

namespace hftrain::metrics {
namespace {

// Dense peak TFLOP/s (no 2:4 structured sparsity: datasheets print the sparse figure, twice the
// dense one, first). bf16 = 0: the device has no bf16 tensor cores. tf32: devices without TF32
// (Volta, Turing) run fp32 matmuls on the CUDA cores, so their fp32 figure stands in.
struct DevicePeak {
  const char* pattern;  // matched case-insensitively as a whole word of the device name
  double bf16;
  double fp16;
  double tf32;
  double fp32;
};

// Ordered most specific first; the first match wins. Sources:
//  H100 SXM5 / PCIe / NVL: NVIDIA H100 Tensor Core GPU datasheet (2023/2024): BF16 1979 / 1513 /
//    1671 TF with sparsity, TF32 989 / 756 / 835 with sparsity, FP32 67 / 51 / 60.
//    "NVIDIA H100 80GB HBM3" is the SXM5 part.
//  H200 SXM / NVL: NVIDIA H200 datasheet (2024): BF16 1979 / 1671 sparse, TF32 989 / 835 sparse,
//    FP32 67 / 60.
//  GH200: NVIDIA GH200 Grace Hopper Superchip datasheet: the GPU's figures match H100 SXM5.
//  A100 (SXM4 and PCIe, 40 and 80 GB): NVIDIA A100 datasheet: BF16 312, TF32 156, FP32 19.5.
//  A10: NVIDIA A10 datasheet: BF16 125 (250 sparse), TF32 62.5, FP32 31.2. The A10G (AWS g5) has
//    no NVIDIA datasheet of its own; AWS sells it as an A10 variant, so it gets the A10's figures.
//    Where a measured peak is preferred, MfuOptions::peak_flops_override replaces them.
//  L4: NVIDIA L4 datasheet: BF16 242 sparse, TF32 120 sparse, FP32 30.3.
//  L40S: NVIDIA L40S datasheet: BF16 733 sparse (362.05 dense), TF32 366 sparse, FP32 91.6.
//  L40: NVIDIA L40 datasheet: BF16 362.1 sparse, TF32 181 sparse, FP32 90.5.
//  RTX 4090: NVIDIA Ada Lovelace architecture whitepaper, appendix: FP16/BF16 tensor with FP32
//    accumulate (what PyTorch uses) 165.2 dense, TF32 82.6, FP32 82.6.
//  RTX 3090: NVIDIA Ampere GA102 whitepaper, appendix: FP16/BF16 tensor with FP32 accumulate 71,
//    TF32 35.6, FP32 35.6.
//  RTX A6000: NVIDIA RTX A6000 datasheet: tensor 309.7 TF sparse, FP32 38.7; TF32 half of FP16.
//  V100 SXM2 / PCIe / V100S: NVIDIA V100 datasheet: FP16 tensor 125 / 112 / 130, FP32 15.7 / 14 /
//    16.4.
//  T4: NVIDIA T4 datasheet: FP16 tensor 65, FP32 8.1.
//  MI300X / MI325X: AMD Instinct MI300X and MI325X data sheets (same compute die): BF16 1307.4
//    dense, TF32 653.7, FP32 matrix 163.4. ROCm builds of torch report these names as CUDA devices.
constexpr DevicePeak kPeaks[] = {
    {"GH200", 989.5, 989.5, 494.5, 67.0},
    {"H200 NVL", 835.5, 835.5, 417.5, 60.0},
    {"H200", 989.5, 989.5, 494.5, 67.0},
    {"H100 NVL", 835.5, 835.5, 417.5, 60.0},
    {"H100 PCIe", 756.5, 756.5, 378.0, 51.0},
    {"H100", 989.5, 989.5, 494.5, 67.0},
    {"A100", 312.0, 312.0, 156.0, 19.5},
    {"A10G", 125.0, 125.0, 62.5, 31.2},
    {"A10", 125.0, 125.0, 62.5, 31.2},
    {"L40S", 362.05, 362.05, 183.0, 91.6},
    {"L40", 181.05, 181.05, 90.5, 90.5},
    {"L4", 121.0, 121.0, 60.0, 30.3},
    {"RTX 4090", 165.2, 165.2, 82.6, 82.6},
    {"RTX 3090", 71.0, 71.0, 35.6, 35.6},
    {"RTX A6000", 154.8, 154.8, 77.4, 38.7},
    {"V100S", 0.0, 130.0, 16.4, 16.4},
    {"V100-PCIE", 0.0, 112.0, 14.0, 14.0},
    {"V100", 0.0, 125.0, 15.7, 15.7},
    {"T4", 0.0, 65.0, 8.1, 8.1},
    {"MI300X", 1307.4, 1307.4, 653.7, 163.4},
    {"MI325X", 1307.4, 1307.4, 653.7, 163.4},
};

bool is_word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0;
}

char lower(char c) {
  return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
}

// `pattern` occurs in `name`, ignoring case, not glued to letters or digits on either side: "A10"
// must not match "A100", nor "H200" match "GH200".
bool contains_word(std::string_view name, std::string_view pattern) {
  if (pattern.size() > name.size()) return false;
  for (size_t at = 0; at + pattern.size() <= name.size(); ++at) {
    bool same = true;
    for (size_t i = 0; i < pattern.size() && same; ++i)
      same = lower(name[at + i]) == lower(pattern[i]);
    if (!same) continue;
    const size_t end = at + pattern.size();
    const bool left_ok = at == 0 || !is_word_char(name[at - 1]);
    const bool right_ok = end == name.size() || !is_word_char(name[end]);
    if (left_ok && right_ok) return true;
  }
  return false;
}

const char* precision_name(PeakPrecision p) {
  switch (p) {
    case PeakPrecision::kBf16:
      return "bf16";
    case PeakPrecision::kFp16:
      return "fp16";
    case PeakPrecision::kTf32:
      return "tf32";
    case PeakPrecision::kFp32:
      return "fp32";
  }
  return "?";
}

}  // namespace

double flops_per_token(const ModelShape& s) {
  // In double: 12*L*H*Q*T and 6*N of a large model times a long context can pass int64's range.
  const double n = static_cast<double>(s.non_embedding_params);
  const double attention = 12.0 * static_cast<double>(s.num_layers) *
                           static_cast<double>(s.num_heads) * static_cast<double>(s.head_dim) *
                           static_cast<double>(s.seq_len);
  return 6.0 * n + attention;
}

std::optional<double> peak_flops(std::string_view device_name, PeakPrecision precision) {
  for (const DevicePeak& d : kPeaks) {
    if (!contains_word(device_name, d.pattern)) continue;
    double tflops = 0;
    switch (precision) {
      case PeakPrecision::kBf16:
        tflops = d.bf16;
        break;
      case PeakPrecision::kFp16:
        tflops = d.fp16;
        break;
      case PeakPrecision::kTf32:
        tflops = d.tf32;
        break;
      case PeakPrecision::kFp32:
        tflops = d.fp32;
        break;
    }
    if (tflops <= 0) return std::nullopt;
    return tflops * 1e12;
  }
  return std::nullopt;
}

MfuCalculator::MfuCalculator(const MfuOptions& options)
    : flops_per_token_(metrics::flops_per_token(options.model)) {
  std::optional<double> one = options.peak_flops_override;
  if (one && !(*one > 0 && std::isfinite(*one))) one.reset();
  if (!one) one = peak_flops(options.device_name, options.precision);
  if (one) {
    total_peak_ = *one * static_cast<double>(options.num_devices > 0 ? options.num_devices : 1);
    return;
  }
  // Once, here, rather than on every logging step.
  util::log::warn("MFU is not reported: no " + std::string(precision_name(options.precision)) +
                  " peak FLOP/s is known for device '" + options.device_name +
                  "'; set the peak FLOP/s override to report it");
}

std::optional<double> MfuCalculator::mfu(double tokens_per_s) const {
  if (!total_peak_ || !(tokens_per_s >= 0) || !std::isfinite(tokens_per_s)) return std::nullopt;
  return tokens_per_s * flops_per_token_ / *total_peak_;
}

}  // namespace hftrain::metrics
