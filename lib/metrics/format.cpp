#include "metrics/format.h"

#include <cmath>
#include <cstdio>

namespace hftrain::metrics {
namespace {

std::string printf_string(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

std::string printf_string(const char* format, long long a, long long b) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, a, b);
  return buf;
}

}  // namespace

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const long long s = std::llround(seconds);
  if (s < 60) return std::to_string(s) + "s";
  if (s < 3600) return printf_string("%lldm%02llds", s / 60, s % 60);
  if (s < 86400) return printf_string("%lldh%02lldm", s / 3600, (s % 3600) / 60);
  return printf_string("%lldd%02lldh", s / 86400, (s % 86400) / 3600);
}

std::string format_si(double value) {
  if (!std::isfinite(value)) return format_number(value);
  static constexpr const char* kSuffixes[] = {"", "k", "M", "G", "T", "P"};
  double v = value;
  size_t i = 0;
  while (std::fabs(v) >= 999.5 && i + 1 < std::size(kSuffixes)) {
    v /= 1000.0;
    ++i;
  }
  if (i == 0) return printf_string("%.0f", v);
  const char* format = std::fabs(v) >= 99.95 ? "%.0f" : std::fabs(v) >= 9.995 ? "%.1f" : "%.2f";
  return printf_string(format, v) + kSuffixes[i];
}

std::string format_number(double value, int significant) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", significant, value);
  return buf;
}

std::string format_step_line(const StepMetrics& m, int64_t total_steps, std::optional<double> mfu,
                             std::optional<double> eta_s) {
  std::string line = "step " + std::to_string(m.step);
  if (total_steps > 0) line += "/" + std::to_string(total_steps);
  line += " | epoch " + printf_string("%.2f", m.epoch);
  line += " | loss " + printf_string("%.4f", m.loss);
  line += " | lr " + printf_string("%.3e", m.lr);
  if (m.grad_norm) line += " | grad_norm " + printf_string("%.4f", *m.grad_norm);
  line += " | " + format_si(m.tokens_per_s) + " tok/s";
  line += " | " + printf_string("%.1f", m.step_time_ms) + " ms/step";
  line += " | data " + printf_string("%.1f", m.data_wait_ms) + " ms";
  if (m.peak_mem_mb) line += " | mem " + printf_string("%.0f", *m.peak_mem_mb) + " MiB";
  if (mfu) line += " | mfu " + printf_string("%.1f", 100.0 * *mfu) + "%";
  if (m.loss_scale) {
    line += " | scale " + printf_string("%.0f", *m.loss_scale);
    if (m.skipped_steps > 0) line += " (" + std::to_string(m.skipped_steps) + " skipped)";
  }
  if (eta_s) line += " | eta " + format_duration(*eta_s);
  return line;
}

std::string format_eval_line(const EvalMetrics& m) {
  std::string line = "eval step " + std::to_string(m.step) + " | epoch " + printf_string("%.2f", m.epoch) +
                     " | eval_loss " + printf_string("%.4f", m.eval_loss) + " | eval_ppl " +
                     format_number(perplexity(m.eval_loss), 5);
  for (const auto& [name, value] : m.extra) line += " | " + name + " " + printf_string("%.4f", value);
  return line;
}

}  // namespace hftrain::metrics
