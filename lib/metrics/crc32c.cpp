#include "metrics/crc32c.h"

#include <array>

namespace hftrain::metrics {
namespace {

constexpr uint32_t kPolynomial = 0x82F63B78u;  // Castagnoli, bit-reversed

constexpr std::array<uint32_t, 256> make_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int bit = 0; bit < 8; ++bit) c = (c & 1u) ? (c >> 1) ^ kPolynomial : c >> 1;
    table[i] = c;
  }
  return table;
}

// Byte-at-a-time is plenty: we checksum a few hundred bytes per logging step.
constexpr std::array<uint32_t, 256> kTable = make_table();

}  // namespace

uint32_t crc32c_extend(uint32_t crc, std::string_view data) {
  uint32_t c = ~crc;
  for (unsigned char byte : data) c = kTable[(c ^ byte) & 0xFFu] ^ (c >> 8);
  return ~c;
}

}  // namespace hftrain::metrics
