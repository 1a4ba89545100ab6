#include "model/rope.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <tuple>
#include <utility>

#include <torch/torch.h>

namespace hftrain::model {
namespace {

using config::RopeType;

// base ** (2i / dim) for i < dim / 2, float32 (the exponent is computed in float32, as transformers does).
torch::Tensor powers(double base, int64_t dim) {
  const auto exponent = torch::arange(0, dim, 2, torch::kInt64).to(torch::kFloat32) / dim;
  return torch::pow(base, exponent);
}

torch::Tensor llama3(const torch::Tensor& inv_freq, const RopeScaling& r) {
  const double old_context = static_cast<double>(r.original_max_seq_len);
  const double low_freq_wavelen = old_context / r.low_freq_factor;
  const double high_freq_wavelen = old_context / r.high_freq_factor;
  const auto wavelen = inv_freq.reciprocal() * (2 * std::numbers::pi);
  // Long wavelengths are divided by the factor, short ones kept, the band between interpolated.
  auto scaled = torch::where(wavelen > low_freq_wavelen, inv_freq / r.factor, inv_freq);
  const auto smooth =
      (wavelen.reciprocal() * old_context - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
  const auto smoothed = (1 - smooth) * scaled / r.factor + smooth * scaled;
  const auto medium =
      (wavelen < high_freq_wavelen).logical_not().logical_and((wavelen > low_freq_wavelen).logical_not());
  return torch::where(medium, smoothed, scaled);
}

// The dimension at which a wavelength makes `rotations` turns over the original context.
double correction_dim(double rotations, int64_t dim, double base, double context) {
  return (static_cast<double>(dim) * std::log(context / (rotations * 2 * std::numbers::pi))) / (2 * std::log(base));
}

torch::Tensor yarn(double base, int64_t dim, const RopeScaling& r) {
  const auto pos_freqs = powers(base, dim);
  const auto extrapolation = pos_freqs.reciprocal();
  const auto interpolation = (pos_freqs * r.factor).reciprocal();
  const double context = static_cast<double>(r.original_max_seq_len);
  double low = correction_dim(r.beta_fast, dim, base, context);
  double high = correction_dim(r.beta_slow, dim, base, context);
  if (r.truncate) low = std::floor(low), high = std::ceil(high);
  low = std::max(low, 0.0);
  high = std::min(high, static_cast<double>(dim - 1));
  if (low == high) high += 0.001;  // no zero-width ramp
  const auto ramp = ((torch::arange(dim / 2, torch::kFloat32) - low) / (high - low)).clamp(0, 1);
  const auto extrapolated = 1 - ramp;  // share of each dimension left unscaled
  return interpolation * (1 - extrapolated) + extrapolation * extrapolated;
}

// 1 / (factor_i * base^(2i / dim)) with the per-pair factors in float32.
torch::Tensor longrope(double base, int64_t dim, const std::vector<double>& factors) {
  const auto ext = torch::tensor(factors, torch::kFloat64).to(torch::kFloat32);
  return (ext * powers(base, dim)).reciprocal();
}

// cos and sin of every position for `inv_freq`, times `scale`.
std::pair<torch::Tensor, torch::Tensor> tables(const torch::Tensor& inv_freq, int64_t length, double scale) {
  const auto freqs = torch::arange(length, torch::kInt64).to(torch::kFloat32).unsqueeze(1) * inv_freq;  // (T, D/2)
  const auto emb = torch::cat({freqs, freqs}, -1);                                                       // (T, D)
  return {emb.cos() * scale, emb.sin() * scale};
}

}  // namespace

torch::Tensor rope_inv_freq(const ModelSpec& spec, bool long_factors) {
  const int64_t dim = spec.rotary_dim();
  const RopeScaling& r = spec.rope_scaling;
  switch (r.type) {
    case RopeType::kDefault:
      return powers(spec.rope_theta, dim).reciprocal();
    case RopeType::kLinear:
      return powers(spec.rope_theta, dim).reciprocal() / r.factor;
    case RopeType::kDynamic: {
      // The base grows with the sequence length past max_seq_len; at max_seq_len it is unchanged.
      const double seq = static_cast<double>(spec.max_seq_len);
      const double base = spec.rope_theta * std::pow((r.factor * seq / seq) - (r.factor - 1),
                                                     static_cast<double>(dim) / static_cast<double>(dim - 2));
      return powers(base, dim).reciprocal();
    }
    case RopeType::kLlama3:
      return llama3(powers(spec.rope_theta, dim).reciprocal(), r);
    case RopeType::kYarn:
      return yarn(spec.rope_theta, dim, r);
    case RopeType::kLongrope:
      return longrope(spec.rope_theta, dim, long_factors ? r.long_factor : r.short_factor);
  }
  return {};
}

RopeTables rope_tables(const ModelSpec& spec) {
  const RopeType type = spec.rope_scaling.type;
  const double scale =
      type == RopeType::kYarn || type == RopeType::kLongrope ? spec.rope_scaling.attention_factor : 1.0;
  RopeTables out;
  std::tie(out.cos, out.sin) = tables(rope_inv_freq(spec), spec.max_seq_len, scale);
  if (type == RopeType::kLongrope) {
    std::tie(out.long_cos, out.long_sin) = tables(rope_inv_freq(spec, /*long_factors=*/true), spec.max_seq_len, scale);
  }
  return out;
}

}  // namespace hftrain::model
