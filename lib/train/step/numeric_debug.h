// debug.detect_anomaly and debug.underflow_overflow for the whole training loop: autograd's
// anomaly mode, which names the operation whose gradient is NaN (its message rewritten into one
// clear error), and the modules' trace of the first inf or NaN (model/numeric_trace.h).
#pragma once

#include <cstdint>
#include <optional>

#include <torch/csrc/autograd/anomaly_mode.h>
#include <torch/types.h>

#include "config/config.h"
#include "model/numeric_trace.h"

namespace hftrain::train {

class NumericDebug {
 public:
  explicit NumericDebug(const config::DebugConfig& debug);
  // Before step `step` (counted from 1).
  void set_step(int64_t step);
  // Runs `step_fn`; a NaN gradient anomaly mode caught becomes util::DivergedError naming the
  // operation (hftrain's own autograd functions by their names); every other error goes on.
  template <typename Fn>
  auto run(int64_t step, Fn&& step_fn) {
    try {
      return step_fn();
    } catch (const c10::Error& e) {
      rethrow(e, step);
    }
  }

 private:
  [[noreturn]] void rethrow(const c10::Error& e, int64_t step) const;
  bool detect_anomaly_;
  std::optional<torch::autograd::DetectAnomalyGuard> anomaly_;
  std::optional<model::NumericTraceScope> trace_;
};

}  // namespace hftrain::train
