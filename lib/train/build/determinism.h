// trainer.deterministic: the same bits from the same inputs, run after run, at some cost in speed.
//   ATen's deterministic algorithms (torch.use_deterministic_algorithms(True, warn_only=True)): an
//     operation that has no deterministic kernel warns, naming itself, once, and runs as it is;
//   cuBLAS's fixed workspace (CUBLAS_WORKSPACE_CONFIG=:4096:8, set before the first CUDA matmul
//     unless the environment sets it) and cuDNN's deterministic algorithms without benchmarking;
//   attention by the math or flash kernels only (flash's backward is deterministic under the
//     setting; the memory-efficient and cuDNN kernels' backward accumulate with atomics).
// On the CPU the kernels are deterministic for a fixed thread count already; what still changes
// the bits between runs is named in CONTRIBUTING.md ("Deterministic runs").
#pragma once

#include <torch/types.h>

namespace hftrain::train {

// Applies the settings above for `device` when `on`; nothing when not. Call before the model's
// first CUDA operation.
void set_deterministic(bool on, const torch::Device& device);

}  // namespace hftrain::train
