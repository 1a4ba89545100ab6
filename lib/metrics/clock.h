// The two clocks metrics need, as plain seconds so that tests can pass their own values.
#pragma once

#include <chrono>

namespace hftrain::metrics {

// For durations and rates: never jumps when the system time is adjusted.
inline double monotonic_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// For timestamps in files (JSONL "time", TensorBoard wall_time): seconds since the Unix epoch.
inline double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace hftrain::metrics
