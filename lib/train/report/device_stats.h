// What the metrics need to know about the device the loop runs on: the peak memory it reached,
// and the MFU set-up (model shape, device name, the precision's peak) on GPUs.
#pragma once

#include <optional>

#include <torch/types.h>

#include "config/config.h"
#include "metrics/mfu.h"
#include "train/task/task_model.h"

namespace hftrain::train {

// The CUDA caching allocator's peak on a GPU, host peak RSS on the CPU, in MiB.
std::optional<double> peak_memory_mib(const torch::Device& device);

// MFU is reported on GPU runs only (PaLM convention; the metrics stage looks the peak up by name).
std::optional<metrics::MfuOptions> mfu_options(const torch::Device& device, const TaskModel& model,
                                               const config::Config& config);

}  // namespace hftrain::train
