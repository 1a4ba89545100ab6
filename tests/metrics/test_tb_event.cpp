#include <cstring>
#include <string>

#include <catch2/catch.hpp>

#include "helpers.h"
#include "metrics/crc32c.h"
#include "metrics/tb_event.h"

using namespace hftrain::metrics;
using hftrain::test::hex;

namespace {
uint32_t read_u32(const std::string& s, size_t at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(s[at + i]);
  return v;
}
}  // namespace

// The expected bytes are what protobuf's own serializer produces for the same messages
// (tensorboard.compat.proto.event_pb2.Event(...).SerializeToString()).
TEST_CASE("a scalar event serializes like protobuf's Event", "[metrics][tensorboard]") {
  const std::string bytes = encode_scalars_event(1.5, 300, {{"a/b", 1.0f}, {"x", -2.5f}});
  CHECK(hex(bytes) ==
        "09 00 00 00 00 00 00 f8 3f "           // wall_time = 1.5
        "10 ac 02 "                             // step = 300
        "2a 16 "                                // summary, 22 bytes
        "0a 0a 0a 03 61 2f 62 15 00 00 80 3f "  // value { tag "a/b" simple_value 1 }
        "0a 08 0a 01 78 15 00 00 20 c0");       // value { tag "x" simple_value -2.5 }
}

TEST_CASE("the first event carries the file version", "[metrics][tensorboard]") {
  CHECK(hex(encode_file_version_event(1.5)) ==
        "09 00 00 00 00 00 00 f8 3f 1a 0d 62 72 61 69 6e 2e 45 76 65 6e 74 3a 32");
}

TEST_CASE("TFRecord framing: length, masked CRCs, data", "[metrics][tensorboard]") {
  // Bytes checked against tensorboard.summary.writer.record_writer for b"abc".
  CHECK(hex(frame_tfrecord("abc")) == "03 00 00 00 00 00 00 00 b0 99 49 0e 61 62 63 6e 57 f1 21");

  const std::string data = encode_scalars_event(2.0, 7, {{"train/loss", 3.25f}});
  const std::string framed = frame_tfrecord(data);
  REQUIRE(framed.size() == 8 + 4 + data.size() + 4);
  uint64_t length = 0;
  std::memcpy(&length, framed.data(), 8);  // little-endian host, as every platform we build on
  CHECK(length == data.size());
  CHECK(unmask_crc32c(read_u32(framed, 8)) == crc32c(framed.substr(0, 8)));
  CHECK(framed.substr(12, data.size()) == data);
  CHECK(unmask_crc32c(read_u32(framed, 12 + data.size())) == crc32c(data));
}
