#include <catch2/catch.hpp>

#include "metrics/mfu.h"

using namespace hftrain::metrics;

namespace {
// GPT-2 124M: 12 layers, 12 heads of 64, context 1024. Non-embedding parameters by hand:
// per layer 12*C^2 (attention 4C^2, MLP 8C^2) + 13*C (biases and two layer norms) with C = 768,
// plus the final layer norm 2*C.
constexpr int64_t kC = 768;
constexpr int64_t kGpt2NonEmbedding = 12 * (12 * kC * kC + 13 * kC) + 2 * kC;  // 85,056,000
const ModelShape kGpt2{kGpt2NonEmbedding, 12, 12, 64, 1024};
}  // namespace

TEST_CASE("FLOPs per token follow PaLM: 6N + 12LHQT", "[metrics][mfu]") {
  CHECK(kGpt2NonEmbedding == 85'056'000);
  // 6 * 85,056,000 = 510,336,000; 12 * 12 * 12 * 64 * 1024 = 113,246,208.
  CHECK(flops_per_token(kGpt2) == 623'582'208.0);
  CHECK(flops_per_token(ModelShape{1000, 0, 0, 0, 0}) == 6000.0);
}

TEST_CASE("MFU is tokens/s times FLOPs per token over the peak", "[metrics][mfu]") {
  MfuCalculator on_a100({.model = kGpt2, .device_name = "NVIDIA A100-SXM4-80GB"});
  REQUIRE(on_a100.total_peak_flops());
  CHECK(*on_a100.total_peak_flops() == 312e12);
  // 150,000 tok/s * 623,582,208 FLOP/token = 9.35373312e13; / 3.12e14 = 0.29980...
  CHECK(*on_a100.mfu(150'000) == Approx(150'000.0 * 623'582'208.0 / 312e12));
  CHECK(*on_a100.mfu(150'000) == Approx(0.2998).epsilon(1e-4));

  SECTION("tokens/s of several devices is measured against all their peaks") {
    MfuCalculator eight({.model = kGpt2, .device_name = "NVIDIA H100 80GB HBM3", .num_devices = 8});
    CHECK(*eight.total_peak_flops() == Approx(8 * 989.5e12));
    CHECK(*eight.mfu(8 * 500'000.0) == Approx(500'000.0 * 623'582'208.0 / 989.5e12));
  }
  SECTION("the override replaces the table") {
    MfuCalculator custom(
        {.model = kGpt2, .device_name = "NVIDIA A100-SXM4-80GB", .peak_flops_override = 1e14});
    CHECK(*custom.mfu(1000) == Approx(1000 * 623'582'208.0 / 1e14));
  }
  SECTION("an unknown device reports nothing") {
    MfuCalculator unknown({.model = kGpt2, .device_name = "Imaginary GPU 9000"});
    CHECK_FALSE(unknown.total_peak_flops());
    CHECK_FALSE(unknown.mfu(150'000));
    MfuCalculator rescued(
        {.model = kGpt2, .device_name = "Imaginary GPU 9000", .peak_flops_override = 2e14});
    CHECK(rescued.mfu(150'000));
  }
}

TEST_CASE("peaks are looked up by the CUDA device name", "[metrics][mfu]") {
  using P = PeakPrecision;
  CHECK(peak_flops("NVIDIA H100 80GB HBM3", P::kBf16) == 989.5e12);
  CHECK(peak_flops("NVIDIA H100 80GB HBM3", P::kTf32) == 494.5e12);
  CHECK(peak_flops("NVIDIA H100 PCIe", P::kBf16) == 756.5e12);
  CHECK(peak_flops("NVIDIA H100 NVL", P::kFp16) == 835.5e12);
  CHECK(peak_flops("NVIDIA H200", P::kBf16) == 989.5e12);
  CHECK(peak_flops("NVIDIA GH200 480GB", P::kBf16) == 989.5e12);
  CHECK(peak_flops("NVIDIA A100-SXM4-80GB", P::kBf16) == 312e12);
  CHECK(peak_flops("NVIDIA A100-SXM4-40GB", P::kTf32) == 156e12);
  CHECK(peak_flops("NVIDIA A100-SXM4-40GB", P::kFp32) == 19.5e12);
  CHECK(peak_flops("NVIDIA A100 80GB PCIe", P::kBf16) == 312e12);
  CHECK(peak_flops("NVIDIA A10G", P::kBf16) == 125e12);
  CHECK(peak_flops("NVIDIA A10", P::kBf16) == 125e12);
  CHECK(peak_flops("NVIDIA L4", P::kBf16) == 121e12);
  CHECK(peak_flops("NVIDIA L40S", P::kBf16) == 362.05e12);
  CHECK(peak_flops("NVIDIA L40", P::kBf16) == 181.05e12);
  CHECK(peak_flops("NVIDIA GeForce RTX 4090", P::kBf16) == 165.2e12);
  CHECK(peak_flops("Tesla V100-SXM2-16GB", P::kFp16) == 125e12);
  CHECK(peak_flops("Tesla V100-PCIE-32GB", P::kFp16) == 112e12);
  CHECK(peak_flops("Tesla V100-SXM2-32GB", P::kFp32) == 15.7e12);
  CHECK(peak_flops("Tesla T4", P::kFp16) == 65e12);
  // Case does not matter.
  CHECK(peak_flops("nvidia h100 pcie", P::kBf16) == 756.5e12);
}

TEST_CASE("names match as whole words, and missing precisions are unknown", "[metrics][mfu]") {
  using P = PeakPrecision;
  CHECK_FALSE(peak_flops("NVIDIA RTX A1000", P::kBf16));  // not an A10
  CHECK_FALSE(peak_flops("NVIDIA L4000", P::kBf16));      // not an L4
  CHECK_FALSE(peak_flops("", P::kBf16));
  CHECK_FALSE(peak_flops("cpu", P::kFp32));
  CHECK_FALSE(peak_flops("Tesla V100-SXM2-16GB", P::kBf16));  // Volta has no bf16 tensor cores
  CHECK_FALSE(peak_flops("Tesla T4", P::kBf16));
}
