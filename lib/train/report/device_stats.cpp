#include "train/report/device_stats.h"

#include "metrics/memory.h"
#ifdef HFTRAIN_HAVE_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace hftrain::train {

std::optional<double> peak_memory_mib(const torch::Device& device) {
#ifdef HFTRAIN_HAVE_CUDA
  if (device.is_cuda()) {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
    const auto& allocated = stats.allocated_bytes[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)];
    return static_cast<double>(allocated.peak) / metrics::kBytesPerMib;
  }
#endif
  static_cast<void>(device);
  return metrics::host_peak_rss_mib();
}

std::optional<metrics::MfuOptions> mfu_options(const torch::Device& device, const TaskModel& model,
                                               const config::Config& config) {
#ifdef HFTRAIN_HAVE_CUDA
  if (device.is_cuda()) {
    metrics::MfuOptions o;
    o.model = model.shape(config.data.seq_len);
    o.device_name = at::cuda::getDeviceProperties(device.index())->name;
    switch (config.trainer.precision) {
      case config::Precision::kBf16: o.precision = metrics::PeakPrecision::kBf16; break;
      case config::Precision::kFp16: o.precision = metrics::PeakPrecision::kFp16; break;
      case config::Precision::kFp32:
        o.precision = config.trainer.tf32 ? metrics::PeakPrecision::kTf32 : metrics::PeakPrecision::kFp32;
        break;
    }
    return o;
  }
#endif
  static_cast<void>(device), static_cast<void>(model), static_cast<void>(config);
  return std::nullopt;
}

}  // namespace hftrain::train
