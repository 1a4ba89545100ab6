// The console side of metrics. On a terminal: one live status line at the bottom (step, bar,
// loss, lr, tokens/s, ETA), redrawn in place and moved out of the way whenever a finished line is
// printed, so scrollback holds only finished lines. Elsewhere (a file, a pipe, a batch log): no
// control characters at all, and a plain progress line whenever nothing was printed for
// `plain_interval_s`, so a batch log shows the run is alive even with rare logging steps.
//
// Not thread-safe: the trainer's rank-0 thread drives it.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>

namespace hftrain::metrics {

struct ProgressState {
  int64_t step = 0;
  int64_t total_steps = 0;       // 0: unknown (no bar, no percentage)
  std::optional<double> loss{};  // the last logged loss; unset before the first logging step
  std::optional<double> lr{};
  double tokens_per_s = 0;
  std::optional<double> eta_s{};
};

struct ProgressOptions {
  // Where the display writes. nullptr: std::cerr, where the log's console lines go too, so that
  // clearing the live line before a log line and redrawing it after line up.
  std::ostream* out = nullptr;
  // Whether `out` is a terminal. Unset: isatty(stderr) for std::cerr/std::clog, isatty(stdout)
  // for std::cout, false for any other stream.
  std::optional<bool> interactive{};
  // Terminal width the live line is cut to (a wrapped line cannot be redrawn in place).
  // 0: the terminal's own width (TIOCGWINSZ), else $COLUMNS, else 80.
  int columns = 0;
  // Live line: updates closer together than this are skipped; a terminal redrawn every step of
  // a fast model costs real time.
  double min_redraw_interval_s = 0.1;
  // Plain output: a progress line when nothing was printed for this long. <= 0: never.
  double plain_interval_s = 60;
  int bar_width = 20;
};

// The live line's text, e.g. "step 120/1000 [##------------------] 12% | loss 2.3456 |
// lr 3.00e-04 | 12.3k tok/s | eta 3m40s".
std::string format_progress_line(const ProgressState& state, int bar_width);

class ProgressDisplay {
 public:
  explicit ProgressDisplay(ProgressOptions options = {});
  ~ProgressDisplay();
  ProgressDisplay(const ProgressDisplay&) = delete;
  ProgressDisplay& operator=(const ProgressDisplay&) = delete;

  // New state at monotonic time `now_s`; redraws (terminal) or maybe prints a line (plain).
  void update(const ProgressState& state, double now_s);
  // Runs `print`, which writes finished lines to the same console (util::log, or `out` itself),
  // with the live line cleared before and redrawn after showing `state`. Counts as output for
  // plain_interval_s.
  void print_above(const std::function<void()>& print, const ProgressState& state, double now_s);
  // Clears the live line for good; later updates draw it again. Called by the destructor.
  void finish();

  bool interactive() const { return interactive_; }

 private:
  void draw();
  void clear();

  ProgressOptions options_;
  std::ostream* out_;
  bool interactive_;
  int columns_;
  std::optional<ProgressState> state_;
  bool drawn_ = false;                   // the live line is on screen
  std::optional<double> last_output_s_;  // last redraw (terminal) or last line (plain)
};

}  // namespace hftrain::metrics
