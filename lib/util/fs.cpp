#include "util/fs.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "util/error.h"
#include "util/file_writer.h"

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

void atomic_write_file(const fs::path& path, const std::string& content) {
  atomic_write_with(path, [&content](FileWriter& out) { out.write(content); });
}

void atomic_write_with(const fs::path& path, const std::function<void(FileWriter&)>& fill) {
  fs::path tmp = path;
  tmp += ".tmp-" + std::to_string(::getpid());
  try {
    FileWriter out(tmp);
    fill(out);
    out.close();
    if (::rename(tmp.c_str(), path.c_str()) != 0) throw io_error("rename into", path, errno);
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  fsync_dir(path.parent_path());
}

void publish_dir(const fs::path& staged, const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(dir, ec))) {
    if (::rename(staged.c_str(), dir.c_str()) != 0) throw io_error("rename into", dir, errno);
    return;
  }
  if (::renameat2(AT_FDCWD, staged.c_str(), AT_FDCWD, dir.c_str(), RENAME_EXCHANGE) == 0) {
    fs::remove_all(staged, ec);  // now the old folder
    return;
  }
  if (errno != EINVAL && errno != ENOSYS) throw io_error("replace", dir, errno);
  fs::path old = dir;
  old += ".old-" + std::to_string(::getpid());
  fs::remove_all(old, ec);
  if (::rename(dir.c_str(), old.c_str()) != 0) throw io_error("move aside", dir, errno);
  if (::rename(staged.c_str(), dir.c_str()) != 0) throw io_error("rename into", dir, errno);
  fs::remove_all(old, ec);
}

}  // namespace hftrain::util
