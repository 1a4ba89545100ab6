// Shared helpers for the checkpoint tests: small tensors and a committed checkpoint in one call.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "../config/helpers.h"
#include "ckpt/writer.h"
#include "util/fs.h"

namespace hftrain::test {

// A few tensors of different dtypes and shapes (values depend on `seed`).
inline model::TensorList small_tensors(int64_t seed = 0) {
  return {{"layer.weight",
           torch::arange(12, torch::kFloat32).reshape({3, 4}) + static_cast<float>(seed)},
          {"layer.bias", torch::full({4}, static_cast<double>(seed), torch::kBFloat16)},
          {"counts", torch::arange(5, torch::kInt64) * seed},
          {"empty", torch::empty({0, 2})}};
}

// Commits checkpoint-<step> into `run` with a weights file, a JSON state file and a text file.
inline std::filesystem::path commit_checkpoint(const std::filesystem::path& run, int64_t step) {
  ckpt::CheckpointWriter w(run, step, util::MapEnvironment());
  w.add_safetensors("model.safetensors", small_tensors(step), {{"format", "pt"}});
  w.add_json("trainer_state.json", {{"step", step}, {"loss", 1.5}});
  w.add_bytes("notes/readme.txt", "step " + std::to_string(step) + "\n");
  return w.commit("config-hash-" + std::to_string(step), {{"world_size", 1}});
}

inline std::string read_text(const std::filesystem::path& p) {
  return util::read_file<util::IoError>(p, "file");
}

}  // namespace hftrain::test
