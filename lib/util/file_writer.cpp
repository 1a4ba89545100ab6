#include "util/file_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace hftrain::util {
namespace fs = std::filesystem;

IoError io_error(const std::string& action, const fs::path& path, int err) {
  std::string message = "cannot " + action + " " + path.string() + ": ";
  switch (err) {
    case ENOSPC:
    case EDQUOT:
      return IoError(message + "the disk is full (" + std::strerror(err) + ")",
                     "free some space, or point run.output_dir at a disk with room");
    case EROFS:
      return IoError(message + "the filesystem is read-only",
                     "point run.output_dir at a writable location");
    case EACCES:
    case EPERM:
      return IoError(message + "permission denied",
                     "check the folder's permissions, or point run.output_dir elsewhere");
    case ENOENT:
    case ENOTDIR:
      return IoError(message + std::strerror(err), "check that the folder exists (run.output_dir)");
    default:
      return IoError(message + std::strerror(err), "check the folder and the filesystem it is on");
  }
}

FileWriter::FileWriter(fs::path path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw io_error("create", path_, errno);
}

FileWriter::~FileWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void FileWriter::write(const void* data, size_t size) {
  if (fd_ < 0) throw std::logic_error("FileWriter::write after close: " + path_.string());
  const char* p = static_cast<const char*>(data);
  size_t left = size;
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw io_error("write", path_, errno);
    }
    if (n == 0) throw io_error("write", path_, ENOSPC);  // no progress: the device has no room
    hasher_.update(p, static_cast<size_t>(n));
    p += n;
    left -= static_cast<size_t>(n);
    size_ += static_cast<uint64_t>(n);
  }
}

void FileWriter::close() {
  if (fd_ < 0) return;
  const int fd = fd_;
  fd_ = -1;
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    // EINVAL: a file that cannot be synced (a character device such as /dev/null), not a failed
    // write.
    if (err != EINVAL) throw io_error("flush", path_, err);
    return;
  }
  if (::close(fd) != 0 && errno != EINTR) throw io_error("close", path_, errno);
}

void fsync_dir(const fs::path& dir) {
  const fs::path d = dir.empty() ? fs::path(".") : dir;
  const int fd = ::open(d.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw io_error("open folder", d, errno);
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  // EINVAL: a filesystem that does not sync folders (some FUSE and network ones); nothing to do.
  if (rc != 0 && err != EINVAL) throw io_error("fsync folder", d, err);
}

}  // namespace hftrain::util
