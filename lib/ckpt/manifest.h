// A checkpoint's manifest.json, written last: the proof that a save finished, and the list of
// what it holds. Each file with its size and XXH3-128 checksum (util::Hasher); for .safetensors
// files also every tensor's dtype and shape, so verification can compare headers without loading
// data. The config's hash ties the checkpoint to the resolved config it was trained with.
//   {"format_version": 1, "step": 200, "config_hash": "...", "checksum_algorithm": "xxh3-128",
//    "files": [{"path": "model.safetensors", "size": 1234, "checksum": "<32 hex>",
//               "tensors": {"wte.weight": {"dtype": "F32", "shape": [256, 64]}}}, ...],
//    "extra": {...}}
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace hftrain::ckpt {

inline constexpr int kManifestFormatVersion = 1;
inline constexpr const char* kChecksumAlgorithm = "xxh3-128";

struct ManifestTensor {
  std::string dtype;  // safetensors dtype name: "F32", "BF16", ...
  std::vector<int64_t> shape;
  bool operator==(const ManifestTensor&) const = default;
};

struct ManifestFile {
  std::string path;  // relative to the checkpoint folder, '/'-separated
  uint64_t size = 0;
  std::string checksum;                           // XXH3-128, 32 lowercase hex characters
  std::map<std::string, ManifestTensor> tensors;  // only for .safetensors files

  // One entry of "files" (also how a rank tells rank 0 about a file it wrote). from_json throws
  // CheckpointError naming `where` and the bad field.
  nlohmann::json to_json() const;
  static ManifestFile from_json(const nlohmann::json& j, const std::string& where);
};

struct Manifest {
  int format_version = kManifestFormatVersion;
  int64_t step = 0;
  std::string config_hash;
  std::vector<ManifestFile> files;
  nlohmann::json extra;  // free-form, for the trainer; null when absent

  nlohmann::json to_json() const;
  // Throws CheckpointError naming `where` (the manifest file) and the bad field: not an object,
  // a missing or mistyped field, a format_version from a newer hftrain, an unknown checksum
  // algorithm, a file path that is absolute, contains ".." or repeats.
  static Manifest from_json(const nlohmann::json& j, const std::filesystem::path& where);

  // The entry for `path`, or null.
  const ManifestFile* find(const std::string& path) const;
};

// True for a path a manifest may list: relative, '/'-separated, no empty, "." or ".." parts.
bool is_safe_relative_path(const std::string& path);

}  // namespace hftrain::ckpt
