// Reading and writing safetensors files as torch tensors. The header's format and its strict
// checks live in safetensors_header.h (torch-free): header length within the file, offsets inside
// the data, contiguous and non-overlapping, byte counts consistent with dtype and shape, no
// duplicate names. A hostile file gets a CheckpointError, never a crash or an allocation the size
// of a lie. No code runs on load.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <torch/types.h>

#include "model/weights/safetensors_header.h"

namespace hftrain::util {
class FileWriter;
}

namespace hftrain::model {

using TensorList = std::vector<std::pair<std::string, torch::Tensor>>;

// One safetensors file memory-mapped read-only, its header parsed and checked. Tensors are read
// straight from the mapping, so loading a model needs no second copy of its weights in memory.
class MappedSafetensors {
 public:
  // Throws CheckpointError naming `path` (cannot open or map it, a header that fails the checks).
  explicit MappedSafetensors(const std::filesystem::path& path);
  ~MappedSafetensors();
  MappedSafetensors(const MappedSafetensors&) = delete;
  MappedSafetensors& operator=(const MappedSafetensors&) = delete;

  const std::filesystem::path& path() const { return path_; }
  const SafetensorsHeader& header() const { return header_; }

  // A CPU tensor over the entry's bytes in the mapping: no copy, read-only (writing to it faults),
  // keeping the mapping alive while it lives. Bytes not aligned for the dtype (legal in the
  // format) are copied into an aligned tensor of their own. Throws CheckpointError for a BOOL
  // tensor holding a byte other than 0 or 1.
  torch::Tensor view(const SafetensorsEntry& entry) const;

 private:
  struct Mapping;
  std::filesystem::path path_;
  std::shared_ptr<Mapping> mapping_;
  SafetensorsHeader header_;
};


// Reads every tensor (copied into CPU memory owned by the tensors), in file order. To load a model
// without holding its weights twice, use MappedSafetensors (or StoredWeights for a directory).
TensorList read_safetensors(const std::filesystem::path& path,
                            std::map<std::string, std::string>* metadata = nullptr);

// Writes CPU or GPU tensors (copied to contiguous CPU memory), names sorted, crash-safely
// (temporary file, fsync, rename). Throws IoError naming the path, and for a dtype safetensors
// cannot store, a duplicate name, a tensor named "__metadata__" or a name that is not UTF-8.
void write_safetensors(const std::filesystem::path& path, const TensorList& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// Streams the same file format into `out`: the header, then each tensor's bytes in name order,
// copying one tensor at a time to contiguous CPU memory (peak extra memory: the largest tensor,
// not the file). Does not close `out`. Returns the header it wrote. Throws IoError (from `out`,
// or for a dtype safetensors cannot store).
SafetensorsHeader write_safetensors_to(util::FileWriter& out, const TensorList& tensors,
                                       const std::map<std::string, std::string>& metadata = {});

// The safetensors dtype name of a torch dtype ("F32", "BF16", ...). Throws IoError for a dtype
// safetensors cannot store here.
std::string safetensors_dtype_name(torch::ScalarType type);

// The torch dtype of one of safetensors_dtype_names() (std::logic_error for any other name).
torch::ScalarType safetensors_torch_type(const std::string& name);

}  // namespace hftrain::model
