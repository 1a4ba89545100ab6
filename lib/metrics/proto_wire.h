// A minimal protobuf wire-format encoder: the four wire types the TensorBoard event messages need.
// No protobuf library is in our stack, and these few fields do not justify one. Field numbers and
// types come from the .proto the reader uses; nothing here knows about any particular message.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace hftrain::metrics {

enum class WireType : uint8_t {
  kVarint = 0,           // int32, int64, uint64, bool, enum
  kFixed64 = 1,          // double, fixed64
  kLengthDelimited = 2,  // string, bytes, embedded messages
  kFixed32 = 5,          // float, fixed32
};

// Appends `value` as a base-128 varint (least significant group first).
void append_varint(std::string& out, uint64_t value);

// Builds one serialized message. Fields are written in the order the calls are made; protobuf
// readers accept any order, and we follow field-number order anyway to match what protoc emits.
class ProtoWriter {
 public:
  // int64 fields are encoded as the two's-complement uint64 (10 bytes when negative), as protoc
  // does for int64 (not sint64).
  void add_int64(uint32_t field, int64_t value);
  void add_double(uint32_t field, double value);
  void add_float(uint32_t field, float value);
  void add_bytes(uint32_t field, std::string_view bytes);  // strings, bytes and sub-messages
  void add_message(uint32_t field, const ProtoWriter& message) {
    add_bytes(field, message.bytes());
  }

  const std::string& bytes() const { return bytes_; }

 private:
  void add_key(uint32_t field, WireType type);

  std::string bytes_;
};

}  // namespace hftrain::metrics
