// The safetensors format: 8-byte little-endian header length, a JSON header mapping each tensor
// name to {dtype, shape, data_offsets} (plus optional "__metadata__" strings), then the tensor
// bytes. The reader is strict, because files come from outside: header length within the file,
// offsets inside the data, contiguous and non-overlapping, byte counts consistent with dtype and
// shape, no duplicate names. A hostile file gets a CheckpointError, never a crash or an allocation
// the size of a lie. No code runs on load.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <torch/types.h>

namespace hftrain::model {

using TensorList = std::vector<std::pair<std::string, torch::Tensor>>;

// Reads every tensor (copied into CPU memory owned by the tensors), in file order.
TensorList read_safetensors(const std::filesystem::path& path,
                            std::map<std::string, std::string>* metadata = nullptr);

// Writes CPU or GPU tensors (copied to contiguous CPU memory), names sorted, crash-safely
// (temporary file, fsync, rename). Throws IoError naming the path.
void write_safetensors(const std::filesystem::path& path, const TensorList& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace hftrain::model
