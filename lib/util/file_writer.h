// Writing files durably: a FileWriter streams bytes to a new file, checksums them on the way
// (so a checkpoint never re-reads what it wrote), and fsyncs on close(). Every failure is an
// IoError naming the path and the cause, with a hint for a full disk or a read-only folder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "util/error.h"
#include "util/hash.h"

namespace hftrain::util {

// The IoError for a failed system call: "cannot <action> <path>: <cause>", with a hint by errno
// (ENOSPC/EDQUOT: the disk is full; EROFS/EACCES/EPERM: read-only or no permission).
IoError io_error(const std::string& action, const std::filesystem::path& path, int err);

class FileWriter {
 public:
  // Creates or truncates `path` (mode 0644). Throws IoError.
  explicit FileWriter(std::filesystem::path path);
  // Not closed: closes without fsync and without throwing (the caller is unwinding; the file is
  // incomplete and the caller removes it).
  ~FileWriter();
  FileWriter(const FileWriter&) = delete;
  FileWriter& operator=(const FileWriter&) = delete;

  // Writes all bytes (retrying short writes and EINTR). Throws IoError.
  void write(const void* data, size_t size);
  void write(std::string_view bytes) { write(bytes.data(), bytes.size()); }

  const std::filesystem::path& path() const { return path_; }
  // Bytes written so far.
  uint64_t size() const { return size_; }
  // XXH3-128 hex (util::Hasher) of the bytes written so far.
  std::string checksum() const { return hasher_.hex(); }

  // fsync, then close. Throws IoError (a full disk may only show here, on network or
  // delayed-allocation filesystems). Writing after close() is a logic error.
  void close();

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  uint64_t size_ = 0;
  Hasher hasher_;
};

// fsyncs a folder, making the names created, renamed or removed in it durable. An empty path
// means the current folder. Throws IoError.
void fsync_dir(const std::filesystem::path& dir);

}  // namespace hftrain::util
