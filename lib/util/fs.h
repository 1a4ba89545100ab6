// Filesystem helpers with user-facing errors and crash-safe writes.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

namespace hftrain::util {

// Reads a whole regular file. `what` names it in errors ("recipe", "data file"). Throws
// `ErrorT` (a util::Error subclass) for a missing path, a directory, an unreadable file or one
// larger than `max_bytes`.
template <class ErrorT>
std::string read_file(const std::filesystem::path& path, const std::string& what,
                      size_t max_bytes = size_t{64} << 20);

// Writes `content` to `path` so that a crash at any instant leaves either the old file or the
// new one: a temporary file in the same folder, fsync, rename over, fsync the folder.
// Throws IoError naming the path on any failure and removes the temporary file.
void atomic_write_file(const std::filesystem::path& path, const std::string& content);

}  // namespace hftrain::util
