#include "metrics/append_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "util/error.h"
#include "util/file_writer.h"

namespace hftrain::metrics {
namespace {

[[noreturn]] void fail(const std::string& action, const std::filesystem::path& path, int err) {
  throw util::io_error(action, path, err);  // names the cause (disk full, read-only) and its fix
}

}  // namespace

AppendFile::AppendFile(std::filesystem::path path, Mode mode, bool sync)
    : path_(std::move(path)), sync_(sync) {
  int flags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC;
  if (mode == Mode::kExclusive) flags |= O_EXCL;
  fd_ = ::open(path_.c_str(), flags, 0644);
  if (fd_ < 0) fail(mode == Mode::kExclusive ? "create" : "open for appending", path_, errno);
  struct stat st {};
  if (::fstat(fd_, &st) == 0) had_content_ = st.st_size > 0;
}

AppendFile::~AppendFile() {
  if (fd_ >= 0) ::close(fd_);
}

AppendFile::AppendFile(AppendFile&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(std::exchange(other.fd_, -1)),
      sync_(other.sync_),
      had_content_(other.had_content_) {}

AppendFile& AppendFile::operator=(AppendFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    sync_ = other.sync_;
    had_content_ = other.had_content_;
  }
  return *this;
}

void AppendFile::append(std::string_view bytes) {
  if (fd_ < 0) throw util::IoError("cannot write " + path_.string() + ": the file is closed");
  const char* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write", path_, errno);
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (sync_ && ::fsync(fd_) != 0) fail("fsync", path_, errno);
}

void AppendFile::close() {
  if (fd_ < 0) return;
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) fail("close", path_, errno);
}

}  // namespace hftrain::metrics
