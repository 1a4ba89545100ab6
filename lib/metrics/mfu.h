// Model FLOPs utilisation with the PaLM convention (Chowdhery et al. 2022, appendix B): the FLOPs
// the model needs per token, times tokens per second, over the hardware's peak. Activation
// recomputation is not counted, so MFU is comparable across runs that trade memory for compute.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace hftrain::metrics {

struct ModelShape {
  // N: every parameter except token/position embeddings, plus a tied output layer (V x C), whose
  // product every token goes through although its weight is the embedding's.
  int64_t non_embedding_params = 0;
  int64_t num_layers = 0;            // L
  int64_t num_heads = 0;             // H
  int64_t head_dim = 0;              // Q
  int64_t seq_len = 0;               // T: the training context length
};

// 6*N (forward 2N plus backward 4N) + 12*L*H*Q*T (attention scores and weighted values, forward
// and backward). Training FLOPs per token.
double flops_per_token(const ModelShape& shape);

// The math the step's matrix multiplies run in, which picks the peak to compare against.
enum class PeakPrecision {
  kBf16,  // bf16 autocast / bf16 weights: dense bf16 tensor-core peak
  kFp16,  // fp16 autocast: dense fp16 tensor-core peak
  kTf32,  // fp32 weights with TF32 matmuls allowed
  kFp32,  // strict fp32
};

// Dense (no 2:4 sparsity) peak FLOP/s of one device for `precision`, looked up by its CUDA
// device name (torch.cuda.get_device_name, cudaDeviceProp::name). nullopt when the device is not
// in the table or lacks that precision (bf16 before Ampere).
std::optional<double> peak_flops(std::string_view device_name, PeakPrecision precision);

struct MfuOptions {
  ModelShape model{};
  std::string device_name{};  // CUDA device name of every device of the run
  PeakPrecision precision = PeakPrecision::kBf16;
  // Peak FLOP/s of one device, replacing the table (unlisted devices, clocks set by the user).
  std::optional<double> peak_flops_override{};
  // Devices the tokens/s is measured over (world size when tokens/s counts every rank).
  int64_t num_devices = 1;
};

// Turns tokens/s into MFU. Resolves the peak once; for an unknown device it warns once (through
// util::log) and then reports nullopt for every step.
class MfuCalculator {
 public:
  explicit MfuCalculator(const MfuOptions& options);

  // MFU as a fraction (0.45 = 45%), or nullopt when the peak is unknown.
  std::optional<double> mfu(double tokens_per_s) const;

  double flops_per_token() const { return flops_per_token_; }
  // Peak of all devices together; nullopt when unknown.
  std::optional<double> total_peak_flops() const { return total_peak_; }

 private:
  double flops_per_token_ = 0;
  std::optional<double> total_peak_;
};

}  // namespace hftrain::metrics
