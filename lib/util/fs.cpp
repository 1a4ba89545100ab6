#include "util/fs.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "util/error.h"

namespace hftrain::util {
namespace fs = std::filesystem;

template <class ErrorT>
std::string read_file(const fs::path& path, const std::string& what, size_t max_bytes) {
  std::error_code ec;
  auto status = fs::status(path, ec);
  if (ec || !fs::exists(status)) {
    throw ErrorT(what + " " + path.string() + " does not exist", "check the path");
  }
  if (fs::is_directory(status)) {
    throw ErrorT(what + " " + path.string() + " is a directory, not a file",
                 "name the file inside it");
  }
  if (!fs::is_regular_file(status)) {
    throw ErrorT(what + " " + path.string() + " is not a regular file");
  }
  auto size = fs::file_size(path, ec);
  if (!ec && size > max_bytes) {
    throw ErrorT(what + " " + path.string() + " is " + std::to_string(size) +
                 " bytes, more than the " + std::to_string(max_bytes) + " allowed");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw ErrorT("cannot read " + what + " " + path.string() + ": " + std::strerror(errno),
                 "check its permissions");
  }
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) throw ErrorT("error while reading " + what + " " + path.string());
  return buf.str();
}

template std::string read_file<ConfigError>(const fs::path&, const std::string&, size_t);
template std::string read_file<DataError>(const fs::path&, const std::string&, size_t);
template std::string read_file<CheckpointError>(const fs::path&, const std::string&, size_t);
template std::string read_file<IoError>(const fs::path&, const std::string&, size_t);
template std::string read_file<UsageError>(const fs::path&, const std::string&, size_t);

namespace {

[[noreturn]] void fail(const std::string& action, const fs::path& path, int err) {
  throw IoError("cannot " + action + " " + path.string() + ": " + std::strerror(err),
                err == ENOSPC ? "free some disk space" : "check that the folder is writable");
}

void fsync_dir(const fs::path& dir) {
  int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) fail("open folder", dir, errno);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) fail("fsync folder", dir, err);
}

}  // namespace

void atomic_write_file(const fs::path& path, const std::string& content) {
  const fs::path dir = path.parent_path();
  fs::path tmp = path;
  tmp += ".tmp-" + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("create", tmp, errno);
  const char* p = content.data();
  size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      fail("write", tmp, err);
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    fail("flush", tmp, err);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    fail("rename into", path, err);
  }
  fsync_dir(dir);
}

}  // namespace hftrain::util
