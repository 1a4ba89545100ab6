#include <limits>

#include <catch2/catch.hpp>

#include "metrics/format.h"

using namespace hftrain::metrics;

TEST_CASE("durations read at a glance", "[metrics][format]") {
  CHECK(format_duration(0) == "0s");
  CHECK(format_duration(42.4) == "42s");
  CHECK(format_duration(185) == "3m05s");
  CHECK(format_duration(3720) == "1h02m");
  CHECK(format_duration(2 * 86400 + 3 * 3600 + 59) == "2d03h");
  CHECK(format_duration(-1) == "?");
  CHECK(format_duration(std::numeric_limits<double>::infinity()) == "?");
}

TEST_CASE("large counts get SI suffixes with three figures", "[metrics][format]") {
  CHECK(format_si(950) == "950");
  CHECK(format_si(12345) == "12.3k");
  CHECK(format_si(1234567) == "1.23M");
  CHECK(format_si(999999) == "1.00M");
  CHECK(format_si(456e9) == "456G");
  CHECK(format_si(std::numeric_limits<double>::quiet_NaN()) == "nan");
}

TEST_CASE("the step line names each value and leaves out what is unknown", "[metrics][format]") {
  StepMetrics m;
  m.step = 120;
  m.epoch = 0.12;
  m.loss = 2.34567;
  m.lr = 3e-4;
  m.tokens_per_s = 12345;
  m.step_time_ms = 250.06;
  m.data_wait_ms = 1.24;
  CHECK(format_step_line(m, 1000, std::nullopt, std::nullopt) ==
        "step 120/1000 | epoch 0.12 | loss 2.3457 | lr 3.000e-04 | 12.3k tok/s | 250.1 ms/step | "
        "data 1.2 ms");
  m.grad_norm = 0.8123;
  m.peak_mem_mb = 1234.4;
  CHECK(format_step_line(m, 0, 0.4123, 220.0) ==
        "step 120 | epoch 0.12 | loss 2.3457 | lr 3.000e-04 | grad_norm 0.8123 | 12.3k tok/s | "
        "250.1 ms/step | data 1.2 ms | mem 1234 MiB | mfu 41.2% | eta 3m40s");
  m.loss_scale = 65536.0;  // fp16: the scale, and the skipped steps when there were any
  CHECK(format_step_line(m, 0, std::nullopt, std::nullopt).ends_with("| mem 1234 MiB | scale 65536"));
  m.skipped_steps = 3;
  CHECK(format_step_line(m, 0, std::nullopt, std::nullopt).ends_with("| mem 1234 MiB | scale 65536 (3 skipped)"));
}

TEST_CASE("the eval line shows loss and perplexity", "[metrics][format]") {
  CHECK(format_eval_line(EvalMetrics{.step = 500, .epoch = 1.5, .eval_loss = 2.0}) ==
        "eval step 500 | epoch 1.50 | eval_loss 2.0000 | eval_ppl 7.3891");
}
