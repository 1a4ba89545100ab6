// Content hashes for checksums and cache keys: XXH3 (xxHash), fast enough to checksum every byte a
// checkpoint writes while writing it. Not cryptographic: it detects damage, not tampering.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

namespace hftrain::util {

// Streaming XXH3-128. hex() may be called at any point and does not end the stream.
class Hasher {
 public:
  Hasher();
  ~Hasher();
  Hasher(Hasher&&) noexcept;
  Hasher& operator=(Hasher&&) noexcept;

  void update(const void* data, size_t size);
  void update(std::string_view bytes) { update(bytes.data(), bytes.size()); }
  // The digest of everything so far: 32 lowercase hex characters (XXH3-128's canonical order).
  std::string hex() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// XXH3-128 of `bytes` as 32 lowercase hex characters.
std::string hash_hex(std::string_view bytes);

// XXH3-64 of `bytes`, for short keys (cache file names).
uint64_t hash64(std::string_view bytes);

// XXH3-128 of a file's bytes, read in 1 MiB chunks. Throws IoError naming the path.
std::string hash_file_hex(const std::filesystem::path& path);

}  // namespace hftrain::util
