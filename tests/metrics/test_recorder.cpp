#include <unistd.h>

#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "helpers.h"
#include "metrics/recorder.h"
#include "util/error.h"
#include "util/log.h"

using namespace hftrain;
using namespace hftrain::metrics;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {
StepMetrics step_metrics(int64_t step) {
  StepMetrics m;
  m.step = step;
  m.epoch = static_cast<double>(step) / 100.0;
  m.loss = 3.0 - 0.01 * static_cast<double>(step);
  m.lr = 1e-3;
  m.grad_norm = 1.0;
  m.tokens_seen = step * 1024;
  m.tokens_per_s = 10240;
  m.step_time_ms = 100;
  m.data_wait_ms = 2;
  m.peak_mem_mb = 512;
  return m;
}

// A recorder with fixed clocks and its console in `out`.
RecorderOptions options_for(const std::filesystem::path& dir, std::ostream* out, bool interactive) {
  RecorderOptions o;
  o.run_dir = dir;
  o.total_steps = 100;
  o.tensorboard_options.hostname = "testhost";
  o.progress_options.out = out;
  o.progress_options.interactive = interactive;
  o.progress_options.columns = 200;
  o.wall_clock = [] { return 1700000000.0; };
  o.monotonic_clock = [] { return 50.0; };
  return o;
}
}  // namespace

TEST_CASE("steps and evals land in metrics.jsonl, TensorBoard and the text log",
          "[metrics][recorder]") {
  test::MetricsTempDir d;
  const auto run_dir = d.path() / "run";  // created by the recorder
  const auto log_path = run_dir / "train.log";
  std::ostringstream console;
  {
    std::filesystem::create_directories(run_dir);
    util::log::set_file(log_path.string());
    Recorder r(options_for(run_dir, &console, /*interactive=*/false));
    r.log_step(step_metrics(10));
    r.log_step(step_metrics(20));
    r.log_eval(EvalMetrics{.step = 20, .epoch = 0.2, .eval_loss = 2.0});
    r.message("checkpoint saved");
    REQUIRE(r.tensorboard());
    CHECK(r.tensorboard()->path().filename() == "events.out.tfevents.1700000000.testhost");
    util::log::set_file("");
  }
  const auto lines = test::lines_of(test::slurp(run_dir / kMetricsFileName));
  REQUIRE(lines.size() == 3);
  const json first = json::parse(lines[0]);
  CHECK(first["step"] == 10);
  CHECK(first["loss"] == Approx(2.9));
  CHECK(first["tokens_seen"] == 10240);
  CHECK(first["peak_mem_mb"] == 512.0);
  CHECK_FALSE(first.contains("mfu"));  // a CPU run
  CHECK(first["time"] == 1700000000.0);
  const json eval = json::parse(lines[2]);
  CHECK(eval["type"] == "eval");
  CHECK(eval["eval_ppl"].get<double>() == Approx(7.389056));

  const std::string log = test::slurp(log_path);
  CHECK_THAT(log, Contains("step 10/100 | epoch 0.10 | loss 2.9000") && Contains("eta 9s"));
  CHECK_THAT(log, Contains("eval step 20 | epoch 0.20 | eval_loss 2.0000"));
  CHECK_THAT(log, Contains("checkpoint saved"));
  // Not a terminal: the display itself stayed quiet (logging steps are the periodic lines).
  CHECK(console.str().find('\x1b') == std::string::npos);
  CHECK(console.str().find('\r') == std::string::npos);
}

TEST_CASE("a resumed run appends to metrics.jsonl and adds an event file", "[metrics][recorder]") {
  test::MetricsTempDir d;
  std::ostringstream console;
  {
    Recorder r(options_for(d.path(), &console, false));
    r.log_step(step_metrics(10));
  }
  {
    auto o = options_for(d.path(), &console, false);
    o.wall_clock = [] { return 1700000100.0; };
    o.start_step = 10;  // resumed from a checkpoint at step 10
    Recorder r(o);
    r.log_step(step_metrics(20));
  }
  const auto lines = test::lines_of(test::slurp(d.path() / kMetricsFileName));
  REQUIRE(lines.size() == 2);
  CHECK(json::parse(lines[0])["step"] == 10);
  CHECK(json::parse(lines[1])["step"] == 20);
  CHECK(std::filesystem::exists(d.path() / "events.out.tfevents.1700000000.testhost"));
  CHECK(std::filesystem::exists(d.path() / "events.out.tfevents.1700000100.testhost"));
}

TEST_CASE("a run restarted at an earlier step drops the records an earlier process wrote after it",
          "[metrics][recorder]") {
  test::MetricsTempDir d;
  std::ostringstream console;
  {
    Recorder r(options_for(d.path(), &console, false));
    for (int64_t s : {10, 20, 30}) r.log_step(step_metrics(s));
  }
  {
    auto o = options_for(d.path(), &console, false);
    o.wall_clock = [] { return 1700000100.0; };
    o.start_step = 20;  // the checkpoint the run resumed from: step 30 never happened now
    Recorder r(o);
    r.log_step(step_metrics(30));
  }
  auto lines = test::lines_of(test::slurp(d.path() / kMetricsFileName));
  REQUIRE(lines.size() == 3);
  CHECK(json::parse(lines[2])["step"] == 30);
  {
    Recorder r(options_for(d.path(), &console, false));  // a new run (start_step 0) starts a fresh history
  }
  CHECK(test::slurp(d.path() / kMetricsFileName).empty());
}

TEST_CASE("drop_records_after keeps what it cannot read and the records up to the step", "[metrics][jsonl]") {
  test::MetricsTempDir d;
  const auto path = d.path() / "m.jsonl";
  {
    std::ofstream(path) << "{\"step\": 1}\nnot json\n{\"step\": 5, \"eval_loss\": 2}\n{\"other\": 9}\n{\"step\": 3}\n";
  }
  CHECK(drop_records_after(path, 3) == 1);
  CHECK(test::slurp(path) == "{\"step\": 1}\nnot json\n{\"other\": 9}\n{\"step\": 3}\n");
  CHECK(drop_records_after(path, 3) == 0);
  CHECK(drop_records_after(d.path() / "missing.jsonl", 0) == 0);
}

TEST_CASE("GPU runs carry MFU, null for an unknown device", "[metrics][recorder]") {
  test::MetricsTempDir d;
  const ModelShape shape{1'000'000, 2, 4, 16, 128};  // 6e6 + 12*2*4*16*128 = 6,196,608 FLOP/token
  SECTION("known device") {
    auto o = options_for(d.path(), nullptr, false);
    o.console = false;
    o.mfu = MfuOptions{.model = shape, .device_name = "NVIDIA A100-SXM4-40GB"};
    Recorder r(o);
    r.log_step(step_metrics(10));
    const json j = json::parse(test::lines_of(test::slurp(d.path() / kMetricsFileName))[0]);
    CHECK(j["mfu"].get<double>() == Approx(10240.0 * 6'196'608.0 / 312e12));
  }
  SECTION("unknown device") {
    auto o = options_for(d.path(), nullptr, false);
    o.console = false;
    o.mfu = MfuOptions{.model = shape, .device_name = "Mystery Accelerator"};
    Recorder r(o);
    r.log_step(step_metrics(10));
    r.log_step(step_metrics(20));
    for (const auto& line : test::lines_of(test::slurp(d.path() / kMetricsFileName))) {
      const json j = json::parse(line);
      REQUIRE(j.contains("mfu"));
      CHECK(j["mfu"].is_null());
    }
  }
}

TEST_CASE("on a terminal the live line follows ticks and steps around log lines",
          "[metrics][recorder]") {
  test::MetricsTempDir d;
  std::ostringstream console;
  auto o = options_for(d.path(), &console, /*interactive=*/true);
  o.jsonl = false;
  o.tensorboard = false;
  double now = 0;
  o.monotonic_clock = [&now] { return now; };
  Recorder r(o);
  ThroughputTracker t;
  t.start(0.0, 0, 0);
  t.record(1.0, 1, 1024);
  now = 1.0;
  r.tick(t);
  CHECK_THAT(console.str(),
             Contains("\r\x1b[Kstep 1/100 [") && Contains("1.02k tok/s") && Contains("eta 1m39s"));
  now = 2.0;
  r.log_step(step_metrics(2));
  // The live line is cleared before the log line and comes back with the logged loss.
  CHECK_THAT(console.str(), Contains("\r\x1b[K\r\x1b[Kstep 2/100 [") && Contains("loss 2.9800"));
  CHECK(console.str().find('\n') == std::string::npos);  // log lines go to util::log, not here
}

TEST_CASE("an unusable run directory is an IoError before training starts", "[metrics][recorder]") {
  test::MetricsTempDir d;
  std::ofstream(d.path() / "plain") << "x";
  CHECK_THROWS_AS(Recorder(options_for(d.path() / "plain" / "run", nullptr, false)), util::IoError);
  CHECK_THROWS_AS(Recorder(options_for(d.path() / "plain", nullptr, false)), util::IoError);
  if (::geteuid() != 0) {  // root ignores permission bits
    std::filesystem::create_directory(d.path() / "ro");
    std::filesystem::permissions(
        d.path() / "ro", std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
    CHECK_THROWS_WITH(Recorder(options_for(d.path() / "ro", nullptr, false)),
                      Contains("ro/metrics.jsonl"));
  }
}
