#include "metrics/proto_wire.h"

#include <bit>

namespace hftrain::metrics {
namespace {

// Protobuf's fixed-width fields are little-endian regardless of the host.
template <class UInt>
void append_little_endian(std::string& out, UInt value) {
  for (size_t i = 0; i < sizeof(UInt); ++i) {
    out.push_back(static_cast<char>(static_cast<uint8_t>(value >> (8 * i))));
  }
}

}  // namespace

void append_varint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>(static_cast<uint8_t>(value) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

void ProtoWriter::add_key(uint32_t field, WireType type) {
  append_varint(bytes_, (uint64_t{field} << 3) | static_cast<uint8_t>(type));
}

void ProtoWriter::add_int64(uint32_t field, int64_t value) {
  add_key(field, WireType::kVarint);
  append_varint(bytes_, static_cast<uint64_t>(value));
}

void ProtoWriter::add_double(uint32_t field, double value) {
  add_key(field, WireType::kFixed64);
  append_little_endian(bytes_, std::bit_cast<uint64_t>(value));
}

void ProtoWriter::add_float(uint32_t field, float value) {
  add_key(field, WireType::kFixed32);
  append_little_endian(bytes_, std::bit_cast<uint32_t>(value));
}

void ProtoWriter::add_bytes(uint32_t field, std::string_view bytes) {
  add_key(field, WireType::kLengthDelimited);
  append_varint(bytes_, bytes.size());
  bytes_.append(bytes);
}

}  // namespace hftrain::metrics
