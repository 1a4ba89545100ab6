#include "metrics/tb_event.h"

#include "metrics/crc32c.h"
#include "metrics/proto_wire.h"

namespace hftrain::metrics {
namespace {

enum EventField : uint32_t { kWallTime = 1, kStep = 2, kFileVersion = 3, kSummary = 5, kSessionLog = 7 };
enum SessionLogField : uint32_t { kStatus = 1 };
constexpr int64_t kSessionStart = 1;
enum SummaryField : uint32_t { kValue = 1 };
enum ValueField : uint32_t { kTag = 1, kSimpleValue = 2 };

void append_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(static_cast<uint8_t>(v >> (8 * i))));
}

void append_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(static_cast<uint8_t>(v >> (8 * i))));
}

}  // namespace

std::string encode_file_version_event(double wall_time) {
  ProtoWriter event;
  event.add_double(kWallTime, wall_time);
  event.add_bytes(kFileVersion, kEventFileVersion);
  return event.bytes();
}

std::string encode_scalars_event(double wall_time, int64_t step,
                                 const std::vector<Scalar>& scalars) {
  ProtoWriter summary;
  for (const Scalar& s : scalars) {
    ProtoWriter value;
    value.add_bytes(kTag, s.tag);
    value.add_float(kSimpleValue, s.value);
    summary.add_message(kValue, value);
  }
  ProtoWriter event;
  event.add_double(kWallTime, wall_time);
  event.add_int64(kStep, step);
  event.add_message(kSummary, summary);
  return event.bytes();
}

std::string encode_session_start_event(double wall_time, int64_t step) {
  ProtoWriter session;
  session.add_int64(kStatus, kSessionStart);
  ProtoWriter event;
  event.add_double(kWallTime, wall_time);
  event.add_int64(kStep, step);
  event.add_message(kSessionLog, session);
  return event.bytes();
}

std::string frame_tfrecord(std::string_view data) {
  std::string out;
  out.reserve(data.size() + 16);
  append_u64(out, data.size());
  append_u32(out, mask_crc32c(crc32c(std::string_view(out.data(), 8))));
  out.append(data);
  append_u32(out, mask_crc32c(crc32c(data)));
  return out;
}

}  // namespace hftrain::metrics
