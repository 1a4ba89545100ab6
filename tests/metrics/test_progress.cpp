#include <sstream>

#include <catch2/catch.hpp>

#include "metrics/progress.h"

using namespace hftrain::metrics;
using Catch::Matchers::Contains;

namespace {
ProgressState state_at(int64_t step) {
  ProgressState s;
  s.step = step;
  s.total_steps = 1000;
  s.loss = 2.5;
  s.lr = 3e-4;
  s.tokens_per_s = 12345;
  s.eta_s = 220;
  return s;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}
}  // namespace

TEST_CASE("the live line shows step, bar, loss, lr, tokens/s and ETA", "[metrics][progress]") {
  CHECK(format_progress_line(state_at(120), 20) ==
        "step 120/1000 [##------------------] 12% | loss 2.5000 | lr 3.00e-04 | 12.3k tok/s | eta "
        "3m40s");
  ProgressState unknown_total;
  unknown_total.step = 7;
  CHECK(format_progress_line(unknown_total, 20) == "step 7");
}

TEST_CASE("on a terminal the line is redrawn in place", "[metrics][progress]") {
  std::ostringstream out;
  ProgressDisplay display(
      {.out = &out, .interactive = true, .columns = 200, .min_redraw_interval_s = 0.5});
  REQUIRE(display.interactive());

  display.update(state_at(1), 10.0);
  CHECK(out.str() == "\r\x1b[K" + format_progress_line(state_at(1), 20));
  display.update(state_at(2), 10.1);  // too soon: skipped
  CHECK(count(out.str(), "\r\x1b[K") == 1);
  display.update(state_at(3), 10.6);
  CHECK(count(out.str(), "\r\x1b[K") == 2);
  CHECK_THAT(out.str(), Contains("step 3/1000"));
  CHECK_THAT(out.str(), !Contains("step 2/1000"));
  CHECK(out.str().find('\n') == std::string::npos);

  SECTION("a finished line is printed above it") {
    out.str("");
    // The line comes back with the state given, even within the redraw interval.
    display.print_above([&] { out << "step 4 | loss 2.5\n"; }, state_at(4), 10.7);
    CHECK(out.str() ==
          "\r\x1b[Kstep 4 | loss 2.5\n\r\x1b[K" + format_progress_line(state_at(4), 20));
  }
  SECTION("finish clears it") {
    out.str("");
    display.finish();
    CHECK(out.str() == "\r\x1b[K");
    out.str("");
    display.finish();  // nothing left to clear
    CHECK(out.str().empty());
  }
}

TEST_CASE("the live line is cut to the terminal width", "[metrics][progress]") {
  std::ostringstream out;
  ProgressDisplay display({.out = &out, .interactive = true, .columns = 30});
  display.update(state_at(5), 0);
  CHECK(out.str() == "\r\x1b[K" + format_progress_line(state_at(5), 20).substr(0, 29));
}

TEST_CASE("elsewhere: plain lines, only when nothing was printed for a while",
          "[metrics][progress]") {
  std::ostringstream out;
  ProgressDisplay display({.out = &out, .interactive = false, .plain_interval_s = 60});
  display.update(state_at(100), 0.0);
  display.update(state_at(200), 30.0);
  CHECK(out.str().empty());
  display.update(state_at(300), 61.0);
  CHECK(out.str() == "step 300/1000 30% | loss 2.5000 | lr 3.00e-04 | 12.3k tok/s | eta 3m40s\n");
  out.str("");
  // A log line printed at 100 s restarts the interval.
  display.print_above([&] { out << "logged\n"; }, state_at(400), 100.0);
  display.update(state_at(450), 150.0);
  CHECK(out.str() == "logged\n");
  display.update(state_at(500), 161.0);
  CHECK(out.str() ==
        "logged\nstep 500/1000 50% | loss 2.5000 | lr 3.00e-04 | 12.3k tok/s | eta 3m40s\n");
  display.finish();
  const std::string text = out.str();
  CHECK(text.find('\r') == std::string::npos);
  CHECK(text.find('\x1b') == std::string::npos);
}

TEST_CASE("a stream that is not a standard one is never taken for a terminal",
          "[metrics][progress]") {
  std::ostringstream out;
  ProgressOptions options;
  options.out = &out;
  ProgressDisplay display(options);
  CHECK_FALSE(display.interactive());
}
