#include <catch2/catch.hpp>

#include "metrics/throughput.h"

using namespace hftrain::metrics;

TEST_CASE("rates come from the window, the ETA from the steps left", "[metrics][throughput]") {
  ThroughputTracker t({.window = 4});
  CHECK(t.tokens_per_s() == 0);
  CHECK_FALSE(t.eta_s(100));
  t.start(100.0, 0, 0);
  // 0.5 s per step, 1000 tokens per step, 0.1 s waiting for data per step.
  for (int step = 1; step <= 4; ++step) t.record(100.0 + 0.5 * step, step, 1000 * step, 0.1);
  CHECK(t.step() == 4);
  CHECK(t.tokens_per_s() == Approx(2000.0));
  CHECK(t.step_time_ms() == Approx(500.0));
  CHECK(t.data_wait_ms() == Approx(100.0));
  CHECK(*t.eta_s(100) == Approx(96 * 0.5));
  CHECK(t.elapsed_s() == Approx(2.0));

  // Four slow steps push the fast ones out of the window.
  for (int step = 5; step <= 8; ++step) t.record(102.0 + 2.0 * (step - 4), step, 1000 * step, 0.0);
  CHECK(t.tokens_per_s() == Approx(500.0));
  CHECK(t.step_time_ms() == Approx(2000.0));
  CHECK(t.data_wait_ms() == Approx(0.0));
  CHECK(*t.eta_s(10) == Approx(4.0));
  CHECK(*t.eta_s(5) == Approx(0.0));  // past the end: nothing left
  CHECK_FALSE(t.eta_s(0));            // unknown total
  CHECK(t.elapsed_s() == Approx(10.0));
}

TEST_CASE("records at logging steps only cover several steps each", "[metrics][throughput]") {
  ThroughputTracker t({.window = 2});
  t.start(0.0, 1000, 4'096'000);  // resumed at step 1000
  t.record(10.0, 1010, 4'096'000 + 40960, 0.5);
  CHECK(t.tokens_per_s() == Approx(4096.0));
  CHECK(t.step_time_ms() == Approx(1000.0));
  CHECK(t.data_wait_ms() == Approx(50.0));
  CHECK(*t.eta_s(2000) == Approx(990.0));
}

TEST_CASE("recording without a start starts there", "[metrics][throughput]") {
  ThroughputTracker t;
  t.record(5.0, 3, 300);
  CHECK(t.tokens_per_s() == 0);
  t.record(6.0, 4, 400);
  CHECK(t.tokens_per_s() == Approx(100.0));
}
