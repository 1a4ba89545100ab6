#include "model/decoder/mixed_mm.h"

#include <torch/torch.h>

namespace hftrain::model {
namespace {

// A 3 x 5 by 5 x 4 product both ways on the device: the one-call path must run, accumulate in
// place, and agree with the fallback (within bf16's rounding of the fallback's result).
bool probe(const torch::Device& device) {
  try {
    const auto bf16 = torch::TensorOptions().dtype(torch::kBFloat16).device(device);
    const torch::Tensor a = torch::arange(15, bf16).reshape({3, 5}).div(8);
    const torch::Tensor b = torch::arange(20, bf16).reshape({5, 4}).div(16);
    const torch::Tensor expected = torch::mm(a.to(torch::kFloat32), b.to(torch::kFloat32));
    torch::Tensor out = torch::empty({3, 4}, bf16.dtype(torch::kFloat32));
    at::mm_out(out, a, b, torch::kFloat32);
    torch::Tensor acc = torch::ones({3, 4}, bf16.dtype(torch::kFloat32));
    at::addmm_out(acc, acc, a, b, torch::kFloat32);
    return torch::allclose(out, expected, 1e-3, 1e-3) && torch::allclose(acc, expected + 1, 1e-3, 1e-3);
  } catch (const c10::Error&) {
    return false;
  }
}

bool low_precision(const torch::Tensor& t) {
  return t.scalar_type() == torch::kBFloat16 || t.scalar_type() == torch::kHalf;
}

}  // namespace

bool fp32_output_products(const torch::Device& device) {
  if (!device.is_cuda()) return false;
  // Constant once known: what this build's kernels do on this kind of device.
  static const bool works = probe(device);
  return works;
}

void mm_into(torch::Tensor& out, const torch::Tensor& a, const torch::Tensor& b) {
  if (low_precision(a) && fp32_output_products(out.device())) {
    at::mm_out(out, a, b, torch::kFloat32);
  } else {
    out.copy_(torch::mm(a, b));
  }
}

void addmm_into(torch::Tensor& acc, const torch::Tensor& a, const torch::Tensor& b) {
  if (low_precision(a) && fp32_output_products(acc.device())) {
    at::addmm_out(acc, acc, a, b, torch::kFloat32);
  } else {
    acc.add_(torch::mm(a, b));
  }
}

}  // namespace hftrain::model
