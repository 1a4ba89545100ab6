// A read-only memory map of a whole file: token caches and token shards are read through it, so
// a corpus larger than RAM costs only page cache and opening it is instant.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

namespace hftrain::data {

class MappedFile {
 public:
  // Maps `path`; throws DataError naming it (`what`: "token shard", "token cache") when it is
  // missing, not a regular file or cannot be mapped. An empty file maps to size 0.
  MappedFile(const std::filesystem::path& path, const std::string& what);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace hftrain::data
