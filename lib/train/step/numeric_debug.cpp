#include "train/step/numeric_debug.h"

#include <string>

#include "util/error.h"

namespace hftrain::train {

NumericDebug::NumericDebug(const config::DebugConfig& debug) : detect_anomaly_(debug.detect_anomaly) {
  if (debug.detect_anomaly) anomaly_.emplace();
  if (debug.underflow_overflow) trace_.emplace(static_cast<size_t>(debug.max_frames));
}

void NumericDebug::set_step(int64_t step) {
  if (trace_) trace_->trace().set_step(step);
}

void NumericDebug::rethrow(const c10::Error& e, int64_t step) const {
  std::string what = e.what_without_backtrace();
  if (!detect_anomaly_ || what.find("nan values") == std::string::npos) throw;
  what = what.substr(0, what.find('\n'));
  // hftrain's own autograd functions by their names, not their C++ wrapper's.
  const size_t node = what.find("torch::autograd::CppNode<");
  const size_t close = what.find(">'", node);
  if (node != std::string::npos && close != std::string::npos) {
    const std::string inner = what.substr(node, close - node);
    what.replace(node, close + 1 - node, inner.substr(inner.rfind("::") + 2));
  }
  throw util::DivergedError("debug.detect_anomaly: step " + std::to_string(step) + ": " + what,
                            "that operation's inputs held the inf or NaN first: debug.underflow_overflow=true "
                            "shows the module whose forward made them");
}

}  // namespace hftrain::train
