#include "train/build/determinism.h"

#include <cstdlib>

#include <ATen/Context.h>

#include "util/log.h"

namespace hftrain::train {

void set_deterministic(bool on, const torch::Device& device) {
  if (!on) return;
  auto& context = at::globalContext();
  context.setDeterministicAlgorithms(true, /*warn_only=*/true);
  context.setDeterministicCuDNN(true);
  context.setBenchmarkCuDNN(false);
  if (device.is_cuda()) {
    // cuBLAS reads it when it makes its handle, at the first matmul: not overwritten when set.
    ::setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/0);
    context.setSDPUseMemEfficient(false);
    context.setSDPUseCuDNN(false);
  }
  util::log::info("trainer.deterministic: deterministic kernels only (an operation without one warns by name)");
}

}  // namespace hftrain::train
