// The bytes of a TensorBoard event file: serialized tensorflow.Event messages, each framed as a
// TFRecord. Pure functions, so the format is tested without touching the disk.
//
// Field numbers (tensorflow/core/util/event.proto, tensorflow/core/framework/summary.proto):
//   Event          { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary
//   = 5; } Summary        { repeated Value value = 1; } Summary.Value  { string tag = 1; float
//   simple_value = 2; }
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hftrain::metrics {

// What TensorBoard expects as the first event of every file.
inline constexpr std::string_view kEventFileVersion = "brain.Event:2";

struct Scalar {
  std::string tag{};  // e.g. "train/loss"; '/' groups charts in TensorBoard
  float value = 0;    // TensorBoard stores scalars as float32
};

// The first event of a file: its wall time and file_version, step 0.
std::string encode_file_version_event(double wall_time);
// One event carrying every scalar of a step in one Summary.
std::string encode_scalars_event(double wall_time, int64_t step,
                                 const std::vector<Scalar>& scalars);

// A SessionLog START at `step` (Event.session_log = 7, SessionLog.status = 1): TensorBoard then
// drops the points of earlier files at or after `step`, which is how a resumed run replaces the
// history its checkpoint did not keep.
std::string encode_session_start_event(double wall_time, int64_t step);

// TFRecord framing: uint64 length, masked CRC-32C of those 8 bytes, the data, masked CRC-32C of
// the data; all little-endian.
std::string frame_tfrecord(std::string_view data);

}  // namespace hftrain::metrics
