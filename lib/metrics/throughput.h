// Running throughput of a training run: tokens/s and step time over a sliding window, data-wait
// time, and the ETA from the steps left. Times are passed in (monotonic seconds), so the tracker
// is deterministic under test and never reads a clock itself.
//
// Without host synchronisation, the time a step "ends" on the host is when its kernels were
// queued, not run. Over a window that ends at a synchronised step (a logging step reads the loss)
// the two agree, so read the rates at logging steps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>

namespace hftrain::metrics {

struct ThroughputOptions {
  // Records the running rates average over (the last `window` calls to record()). Default 20:
  // long enough to smooth one slow step (a checkpoint, an eval), short enough to follow changes.
  size_t window = 20;
};

class ThroughputTracker {
 public:
  explicit ThroughputTracker(ThroughputOptions options = {});

  // Where timing starts: the step and token count a run starts or resumes from.
  void start(double now_s, int64_t step, int64_t tokens_seen);
  // A step (or several) ended at `now_s`, reaching `step` with `tokens_seen` in total, having
  // waited `data_wait_s` for data since the previous record. Starts implicitly when not started.
  void record(double now_s, int64_t step, int64_t tokens_seen, double data_wait_s = 0);

  // Over the window; 0 until two records (the start counts) exist.
  double tokens_per_s() const;
  double step_time_ms() const;  // mean wall time per step
  double data_wait_ms() const;  // mean wait for data per step
  // Steps left to `total_steps` times the mean step time; nullopt without a rate or a total.
  std::optional<double> eta_s(int64_t total_steps) const;

  double elapsed_s() const;  // since start
  int64_t step() const { return samples_.empty() ? 0 : samples_.back().step; }

 private:
  struct Sample {
    double time_s;
    int64_t step;
    int64_t tokens;
    double data_wait_total_s;  // cumulative, so a window's wait is a difference
  };
  double window_seconds() const;
  int64_t window_steps() const;

  ThroughputOptions options_;
  std::deque<Sample> samples_;
  double start_time_s_ = 0;
};

}  // namespace hftrain::metrics
