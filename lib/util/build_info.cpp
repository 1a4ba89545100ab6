#include "util/build_info.h"

#include <sstream>
#include <thread>

#include <torch/cuda.h>
#include <torch/version.h>
#ifdef HFTRAIN_HAVE_CUDA
#include <ATen/cuda/CUDAContext.h>
#endif

namespace hftrain::util {

std::string version_report() {
  const BuildFlags& f = kBuildFlags;
  std::ostringstream out;
  auto yes_no = [](bool b) { return b ? "yes" : "no"; };
  out << "hftrain " << f.version << " (revision " << f.revision << ")\n"
      << "LibTorch " << TORCH_VERSION << " (built against " << f.torch_version << ")\n"
      << "CUDA: " << yes_no(f.cuda) << ", NCCL: " << yes_no(f.nccl) << ", MPI: " << yes_no(f.mpi)
      << "\n";
  const size_t gpus = f.cuda && torch::cuda::is_available() ? torch::cuda::device_count() : 0;
  out << "devices: cpu (" << std::thread::hardware_concurrency() << " threads)";
#ifdef HFTRAIN_HAVE_CUDA
  for (size_t i = 0; i < gpus; ++i) {
    const auto* props = at::cuda::getDeviceProperties(static_cast<c10::DeviceIndex>(i));
    out << ", cuda:" << i << " " << props->name << " (" << (props->totalGlobalMem >> 20) << " MiB)";
  }
#else
  if (gpus > 0) out << ", " << gpus << " CUDA device" << (gpus == 1 ? "" : "s");
#endif
  out << "\n";
  return out.str();
}

}  // namespace hftrain::util
