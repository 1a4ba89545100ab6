#include <cstdint>
#include <limits>
#include <string>

#include <catch2/catch.hpp>

#include "helpers.h"
#include "metrics/proto_wire.h"

using namespace hftrain::metrics;
using hftrain::test::hex;

namespace {
std::string varint(uint64_t v) {
  std::string out;
  append_varint(out, v);
  return hex(out);
}
}  // namespace

TEST_CASE("varints use 7 bits per byte, low group first", "[metrics][proto]") {
  CHECK(varint(0) == "00");
  CHECK(varint(1) == "01");
  CHECK(varint(127) == "7f");
  CHECK(varint(128) == "80 01");
  CHECK(varint(300) == "ac 02");  // the protobuf documentation's example
  CHECK(varint(std::numeric_limits<uint64_t>::max()) == "ff ff ff ff ff ff ff ff ff 01");
}

TEST_CASE("each wire type encodes its key and payload", "[metrics][proto]") {
  SECTION("int64, negative as ten bytes") {
    ProtoWriter w;
    w.add_int64(2, 300);
    w.add_int64(2, -1);
    CHECK(hex(w.bytes()) == "10 ac 02 10 ff ff ff ff ff ff ff ff ff 01");
  }
  SECTION("double is fixed64 little-endian") {
    ProtoWriter w;
    w.add_double(1, 1.5);
    CHECK(hex(w.bytes()) == "09 00 00 00 00 00 00 f8 3f");
  }
  SECTION("float is fixed32 little-endian") {
    ProtoWriter w;
    w.add_float(2, -2.5f);
    CHECK(hex(w.bytes()) == "15 00 00 20 c0");
  }
  SECTION("bytes and sub-messages are length-delimited") {
    ProtoWriter inner;
    inner.add_bytes(1, "abc");
    ProtoWriter outer;
    outer.add_message(5, inner);
    outer.add_bytes(3, "");
    CHECK(hex(inner.bytes()) == "0a 03 61 62 63");
    CHECK(hex(outer.bytes()) == "2a 05 0a 03 61 62 63 1a 00");
  }
  SECTION("field numbers from 16 need a two-byte key") {
    ProtoWriter w;
    w.add_int64(16, 1);
    CHECK(hex(w.bytes()) == "80 01 01");
  }
  SECTION("a length of 128 or more is a multi-byte varint") {
    ProtoWriter w;
    w.add_bytes(1, std::string(200, 'x'));
    CHECK(hex(w.bytes().substr(0, 3)) == "0a c8 01");
    CHECK(w.bytes().size() == 3 + 200);
  }
}
