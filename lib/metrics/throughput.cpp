#include "metrics/throughput.h"

#include <algorithm>

namespace hftrain::metrics {

ThroughputTracker::ThroughputTracker(ThroughputOptions options) : options_(options) {
  options_.window = std::max<size_t>(options_.window, 1);
}

void ThroughputTracker::start(double now_s, int64_t step, int64_t tokens_seen) {
  samples_.clear();
  samples_.push_back({now_s, step, tokens_seen, 0.0});
  start_time_s_ = now_s;
}

void ThroughputTracker::record(double now_s, int64_t step, int64_t tokens_seen,
                               double data_wait_s) {
  if (samples_.empty()) {
    start(now_s, step, tokens_seen);
    return;
  }
  const double waited = samples_.back().data_wait_total_s + std::max(0.0, data_wait_s);
  samples_.push_back({now_s, step, tokens_seen, waited});
  // `window` intervals need window + 1 end points.
  while (samples_.size() > options_.window + 1) samples_.pop_front();
}

double ThroughputTracker::window_seconds() const {
  return samples_.size() < 2 ? 0.0 : samples_.back().time_s - samples_.front().time_s;
}

int64_t ThroughputTracker::window_steps() const {
  return samples_.size() < 2 ? 0 : samples_.back().step - samples_.front().step;
}

double ThroughputTracker::tokens_per_s() const {
  const double seconds = window_seconds();
  if (seconds <= 0) return 0;
  return static_cast<double>(samples_.back().tokens - samples_.front().tokens) / seconds;
}

double ThroughputTracker::step_time_ms() const {
  const int64_t steps = window_steps();
  if (steps <= 0) return 0;
  return 1000.0 * window_seconds() / static_cast<double>(steps);
}

double ThroughputTracker::data_wait_ms() const {
  const int64_t steps = window_steps();
  if (steps <= 0) return 0;
  const double waited = samples_.back().data_wait_total_s - samples_.front().data_wait_total_s;
  return 1000.0 * waited / static_cast<double>(steps);
}

std::optional<double> ThroughputTracker::eta_s(int64_t total_steps) const {
  const int64_t steps = window_steps();
  if (total_steps <= 0 || steps <= 0) return std::nullopt;
  const int64_t left = std::max<int64_t>(0, total_steps - samples_.back().step);
  return static_cast<double>(left) * window_seconds() / static_cast<double>(steps);
}

double ThroughputTracker::elapsed_s() const {
  return samples_.empty() ? 0.0 : samples_.back().time_s - start_time_s_;
}

}  // namespace hftrain::metrics
