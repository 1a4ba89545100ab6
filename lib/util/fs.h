// Filesystem helpers with user-facing errors and crash-safe writes.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
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

class FileWriter;
// The same, for content produced piecewise: `fill` writes into a FileWriter on the temporary
// file. An exception from `fill` removes the temporary file and propagates.
void atomic_write_with(const std::filesystem::path& path,
                       const std::function<void(FileWriter&)>& fill);

// Puts the finished folder `staged` in place of `dir` (same parent filesystem). An existing `dir`
// is swapped with it in one step (renameat2 RENAME_EXCHANGE), so no instant lacks a complete
// `dir`, and the old one is then removed; filesystems without the exchange get rename-aside,
// rename-in. The caller fsyncs the parent folder afterwards. Throws IoError naming `dir`.
void publish_dir(const std::filesystem::path& staged, const std::filesystem::path& dir);

}  // namespace hftrain::util
