#include "data/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/error.h"

namespace hftrain::data {

MappedFile::MappedFile(const std::filesystem::path& path, const std::string& what) : path_(path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    throw util::DataError("cannot open " + what + " " + path.string() + ": " + std::strerror(err),
                          err == ENOENT ? "check the path" : "check its permissions");
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw util::DataError(what + " " + path.string() + " is not a regular file");
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      throw util::DataError("cannot map " + what + " " + path.string() + ": " + std::strerror(err));
    }
    data_ = static_cast<const uint8_t*>(p);
  }
  // The mapping stays valid after the descriptor is closed.
  ::close(fd);
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace hftrain::data
