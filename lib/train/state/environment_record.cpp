#include "train/state/environment_record.h"

#include <unistd.h>

#include <chrono>
#include <ctime>

#include <torch/torch.h>
#include <torch/version.h>

#include "util/build_info.h"
#ifdef HFTRAIN_HAVE_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <torch/csrc/cuda/nccl.h>
#endif

namespace hftrain::train {

using Json = nlohmann::json;

nlohmann::json environment_record(const torch::Device& device, const std::vector<std::string>& command_line,
                                  int world_size) {
  Json env;
  env["hftrain"] = {{"version", util::kBuildFlags.version}, {"revision", util::kBuildFlags.revision}};
  env["libtorch"] = TORCH_VERSION;
  env["cuda"] = nullptr;
  env["nccl"] = nullptr;
  Json devices = Json::array({"cpu"});
#ifdef HFTRAIN_HAVE_CUDA
  if (torch::cuda::is_available()) {
    int runtime = 0;
    if (cudaRuntimeGetVersion(&runtime) == cudaSuccess) {
      env["cuda"] = std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10);
    }
    const uint64_t nccl = torch::cuda::nccl::version();
    env["nccl"] =
        std::to_string(nccl / 10000) + "." + std::to_string(nccl / 100 % 100) + "." + std::to_string(nccl % 100);
    for (int64_t i = 0; i < static_cast<int64_t>(torch::cuda::device_count()); ++i) {
      devices.push_back(std::string("cuda:") + std::to_string(i) + " " +
                        at::cuda::getDeviceProperties(static_cast<c10::DeviceIndex>(i))->name);
    }
  }
#endif
  env["devices"] = devices;
  env["device"] = device.str();
  env["world_size"] = world_size;
  env["rank"] = 0;
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) == 0) env["host"] = host;
  env["command_line"] = command_line;
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char stamp[32] = {};
  std::strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  env["saved_at"] = stamp;
  return env;
}

}  // namespace hftrain::train
