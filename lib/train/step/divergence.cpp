#include "train/step/divergence.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "metrics/format.h"

namespace hftrain::train {

DivergenceJudge::DivergenceJudge(double spike_factor, int64_t spike_window, int64_t max_consecutive)
    : spike_factor_(spike_factor),
      spike_window_(static_cast<size_t>(std::max<int64_t>(1, spike_window))),
      max_consecutive_(max_consecutive) {}

double DivergenceJudge::median() const {
  std::vector<double> sorted(recent_.begin(), recent_.end());
  if (sorted.empty()) return 0;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  return n % 2 == 1 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
}

std::string nonfinite_why(double loss, double grad_norm) {
  if (!std::isfinite(loss)) return "the loss is " + metrics::format_number(loss, 6);
  if (!std::isfinite(grad_norm)) return "the gradient norm is " + metrics::format_number(grad_norm, 6);
  return "";
}

Verdict DivergenceJudge::judge(double loss, double grad_norm) {
  if (std::string why = nonfinite_why(loss, grad_norm); !why.empty()) return {true, std::move(why)};
  if (spike_factor_ > 0 && recent_.size() == spike_window_) {
    const double m = median();
    if (m > 0 && loss > spike_factor_ * m) {
      return {true, "a loss spike: " + metrics::format_number(loss, 6) + " is " +
                        metrics::format_number(loss / m, 3) + " x the median " + metrics::format_number(m, 6) +
                        " of the last " + std::to_string(spike_window_) + " steps (trainer.spike.factor " +
                        metrics::format_number(spike_factor_, 6) + ")"};
    }
  }
  if (spike_factor_ > 0) {
    recent_.push_back(loss);
    if (recent_.size() > spike_window_) recent_.pop_front();
  }
  return {};
}

bool DivergenceJudge::note_bad() {
  ++consecutive_;
  return max_consecutive_ > 0 && consecutive_ >= max_consecutive_;
}

void DivergenceJudge::restore(const State& s) {
  const size_t keep = std::min(s.recent.size(), spike_window_);
  recent_.assign(s.recent.end() - static_cast<std::ptrdiff_t>(keep), s.recent.end());
  consecutive_ = s.consecutive;
}

}  // namespace hftrain::train
