// This machine's host name, for records that say where a run ran.
#pragma once

#include <unistd.h>

#include <array>
#include <string>

namespace hftrain::util {

// gethostname(), or `fallback` when it fails or is empty.
inline std::string host_name(const std::string& fallback = "unknown") {
  std::array<char, 256> buf{};
  if (::gethostname(buf.data(), buf.size() - 1) != 0 || buf[0] == '\0') return fallback;
  return buf.data();
}

}  // namespace hftrain::util
