// CRC-32C (Castagnoli), the checksum TFRecord framing uses, and TensorFlow's "masked" form of it.
#pragma once

#include <cstdint>
#include <string_view>

namespace hftrain::metrics {

// Continues a CRC-32C over `data`; start with crc = 0. Reflected polynomial 0x82F63B78, initial
// value and final xor 0xFFFFFFFF, as in iSCSI (RFC 3720) and TensorFlow's crc32c.
uint32_t crc32c_extend(uint32_t crc, std::string_view data);
inline uint32_t crc32c(std::string_view data) {
  return crc32c_extend(0, data);
}

// TensorFlow stores CRCs masked, because a CRC computed over bytes that themselves contain CRCs
// is weak: rotate right by 15 bits and add a constant (tensorflow/core/lib/hash/crc32c.h).
inline uint32_t mask_crc32c(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}
inline uint32_t unmask_crc32c(uint32_t masked) {
  const uint32_t rot = masked - 0xa282ead8u;
  return (rot >> 17) | (rot << 15);
}

}  // namespace hftrain::metrics
