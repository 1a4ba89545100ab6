#include "metrics/progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "metrics/format.h"

namespace hftrain::metrics {
namespace {

constexpr const char* kClearLine = "\r\x1b[K";  // carriage return, erase to end of line
constexpr int kDefaultColumns = 80;

// The file descriptor behind one of the standard streams; -1 for any other stream.
int standard_fd(const std::ostream* out) {
  if (out == &std::cerr || out == &std::clog) return STDERR_FILENO;
  if (out == &std::cout) return STDOUT_FILENO;
  return -1;
}

int detect_columns(int fd) {
  struct winsize ws {};
  if (fd >= 0 && ::ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  if (const char* env = std::getenv("COLUMNS")) {
    const int n = std::atoi(env);
    if (n > 0) return n;
  }
  return kDefaultColumns;
}

std::string fixed(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

}  // namespace

std::string format_progress_line(const ProgressState& s, int bar_width) {
  std::string line = "step " + std::to_string(s.step);
  if (s.total_steps > 0) {
    const double done =
        std::clamp(static_cast<double>(s.step) / static_cast<double>(s.total_steps), 0.0, 1.0);
    line += "/" + std::to_string(s.total_steps);
    if (bar_width > 0) {
      const int filled = static_cast<int>(done * bar_width);
      line += " [" + std::string(static_cast<size_t>(filled), '#') +
              std::string(static_cast<size_t>(bar_width - filled), '-') + "]";
    }
    line += " " + fixed("%.0f", 100.0 * done) + "%";
  }
  if (s.loss) line += " | loss " + fixed("%.4f", *s.loss);
  if (s.lr) line += " | lr " + fixed("%.2e", *s.lr);
  if (s.tokens_per_s > 0) line += " | " + format_si(s.tokens_per_s) + " tok/s";
  if (s.eta_s) line += " | eta " + format_duration(*s.eta_s);
  return line;
}

ProgressDisplay::ProgressDisplay(ProgressOptions options)
    : options_(options), out_(options.out ? options.out : &std::cerr) {
  const int fd = standard_fd(out_);
  interactive_ = options_.interactive.value_or(fd >= 0 && ::isatty(fd) == 1);
  columns_ = options_.columns > 0 ? options_.columns : detect_columns(fd);
}

ProgressDisplay::~ProgressDisplay() {
  finish();
}

void ProgressDisplay::update(const ProgressState& state, double now_s) {
  state_ = state;
  if (!last_output_s_) {
    // The first update only starts the clocks in plain mode; a terminal shows it at once.
    last_output_s_ = now_s;
    if (interactive_) draw();
    return;
  }
  const double since = now_s - *last_output_s_;
  if (interactive_) {
    if (since < options_.min_redraw_interval_s) return;
    last_output_s_ = now_s;
    draw();
    return;
  }
  if (options_.plain_interval_s > 0 && since >= options_.plain_interval_s) {
    last_output_s_ = now_s;
    *out_ << format_progress_line(state, 0) << '\n' << std::flush;
  }
}

void ProgressDisplay::print_above(const std::function<void()>& print, const ProgressState& state,
                                  double now_s) {
  if (interactive_) clear();
  print();
  state_ = state;
  last_output_s_ = now_s;
  if (interactive_ && state_) draw();
}

void ProgressDisplay::finish() {
  if (interactive_) clear();
}

void ProgressDisplay::draw() {
  if (!state_) return;
  std::string line = format_progress_line(*state_, options_.bar_width);
  // One column short of the width: writing the last column makes some terminals wrap.
  const size_t max_len = static_cast<size_t>(std::max(columns_ - 1, 10));
  if (line.size() > max_len) line.resize(max_len);
  *out_ << kClearLine << line << std::flush;
  drawn_ = true;
}

void ProgressDisplay::clear() {
  if (!drawn_) return;
  *out_ << kClearLine << std::flush;
  drawn_ = false;
}

}  // namespace hftrain::metrics
