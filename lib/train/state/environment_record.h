// environment.json in a checkpoint: the versions (hftrain, LibTorch, CUDA, NCCL), the devices,
// the host, the command line and when it was saved, for `hftrain verify` and for people.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/types.h>

namespace hftrain::train {

nlohmann::json environment_record(const torch::Device& device, const std::vector<std::string>& command_line,
                                  int world_size);

}  // namespace hftrain::train
