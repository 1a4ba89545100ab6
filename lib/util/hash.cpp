#include "util/hash.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

// Header-only use of xxHash: its functions are compiled into this file alone.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "util/error.h"

namespace hftrain::util {
namespace {

std::string to_hex(XXH128_hash_t h) {
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, h);  // big-endian bytes: the order `xxhsum -H2` prints
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s(2 * sizeof(c.digest), '0');
  for (size_t i = 0; i < sizeof(c.digest); ++i) {
    s[2 * i] = kDigits[c.digest[i] >> 4];
    s[2 * i + 1] = kDigits[c.digest[i] & 15];
  }
  return s;
}

}  // namespace

struct Hasher::State {
  XXH3_state_t xxh;
};

Hasher::Hasher() : state_(std::make_unique<State>()) {
  XXH3_128bits_reset(&state_->xxh);
}
Hasher::~Hasher() = default;
Hasher::Hasher(Hasher&&) noexcept = default;
Hasher& Hasher::operator=(Hasher&&) noexcept = default;

void Hasher::update(const void* data, size_t size) {
  if (size > 0) XXH3_128bits_update(&state_->xxh, data, size);
}

std::string Hasher::hex() const {
  return to_hex(XXH3_128bits_digest(&state_->xxh));
}

std::string hash_hex(std::string_view bytes) {
  return to_hex(XXH3_128bits(bytes.data(), bytes.size()));
}

uint64_t hash64(std::string_view bytes) {
  return XXH3_64bits(bytes.data(), bytes.size());
}

std::string hash_file_hex(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw IoError("cannot open " + path.string() + ": " + std::strerror(errno),
                  "check the path and its permissions");
  }
  Hasher hasher;
  std::vector<char> buf(size_t{1} << 20);
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      throw IoError("cannot read " + path.string() + ": " + std::strerror(err));
    }
    if (n == 0) break;
    hasher.update(buf.data(), static_cast<size_t>(n));
  }
  ::close(fd);
  return hasher.hex();
}

}  // namespace hftrain::util
