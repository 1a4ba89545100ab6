#include <string>

#include <catch2/catch.hpp>

#include "metrics/crc32c.h"

using namespace hftrain::metrics;

TEST_CASE("crc32c matches the published check values", "[metrics][crc32c]") {
  // The CRC catalogue's check value for CRC-32/ISCSI.
  CHECK(crc32c("123456789") == 0xE3069283u);
  CHECK(crc32c("") == 0u);
  // RFC 3720, appendix B.4.
  CHECK(crc32c(std::string(32, '\0')) == 0x8A9136AAu);
  CHECK(crc32c(std::string(32, '\xff')) == 0x62A8AB43u);
  std::string ascending, descending;
  for (int i = 0; i < 32; ++i) {
    ascending.push_back(static_cast<char>(i));
    descending.push_back(static_cast<char>(31 - i));
  }
  CHECK(crc32c(ascending) == 0x46DD794Eu);
  CHECK(crc32c(descending) == 0x113FDB5Cu);
}

TEST_CASE("crc32c can be computed in pieces", "[metrics][crc32c]") {
  const std::string text = "The quick brown fox jumps over the lazy dog";
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    const uint32_t first = crc32c_extend(0, std::string_view(text).substr(0, cut));
    CHECK(crc32c_extend(first, std::string_view(text).substr(cut)) == crc32c(text));
  }
  CHECK(crc32c(text) == 0x22620404u);
}

TEST_CASE("masking is TensorFlow's rotate-and-add and can be undone", "[metrics][crc32c]") {
  // rotr(0xE3069283, 15) = 0x2507C60D; + 0xa282ead8 = 0xC78AB0E5 (checked against
  // tensorboard.summary.writer.record_writer.masked_crc32c)
  CHECK(mask_crc32c(0xE3069283u) == 0xC78AB0E5u);
  for (uint32_t crc : {0u, 1u, 0xE3069283u, 0xFFFFFFFFu, 0x80000000u}) {
    CHECK(unmask_crc32c(mask_crc32c(crc)) == crc);
  }
}
