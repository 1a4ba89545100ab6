// Automatic restarts' decisions (lib/launch/restarts.h): which endings may be restarted, the
// back-off, and the failure records the workers leave in the run directory.
#include <filesystem>
#include <unistd.h>

#include <fstream>

#include <catch2/catch.hpp>

#include "launch/restarts.h"

using namespace hftrain;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

launch::FailureRecord record(int rank, const std::string& kind, double time, const std::string& message) {
  launch::FailureRecord r;
  r.rank = rank;
  r.kind = kind;
  r.exit_code = kind == "config" || kind == "data" ? 2 : 1;
  r.message = message;
  r.time = time;
  return r;
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("hftrain-restarts-" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};

}  // namespace

TEST_CASE("restarts: the back-off doubles from the first wait up to its cap", "[launch]") {
  launch::RestartOptions o;
  o.backoff_seconds = 0.5;
  o.max_backoff_seconds = 3;
  CHECK(launch::restart_delay(o, 1) == 0.5);
  CHECK(launch::restart_delay(o, 2) == 1.0);
  CHECK(launch::restart_delay(o, 3) == 2.0);
  CHECK(launch::restart_delay(o, 4) == 3.0);
  CHECK(launch::restart_delay(o, 40) == 3.0);
  o.backoff_seconds = 0;
  CHECK(launch::restart_delay(o, 5) == 0);
}

TEST_CASE("restarts: a death or a failure that may pass is restarted, with the launcher's words as cause", "[launch]") {
  launch::AttemptEnd end;
  end.exit_code = 137;
  end.launcher_cause = "rank 1 (pid 42) was killed by signal 9 (Killed); stopped the other workers";
  end.stop_exit_codes = {130, 143};
  auto v = launch::judge_attempt(end);
  CHECK(v.may_restart);
  CHECK_FALSE(v.finished);
  CHECK(v.cause == end.launcher_cause);

  // A peer's error after the death joins the cause; a distributed error or a full disk may pass.
  end.records = {record(0, "distributed", 5, "error: rank 1 is gone\nhint: look at its log"),
                 record(2, "io", 6, "disk")};
  v = launch::judge_attempt(end);
  CHECK(v.may_restart);
  CHECK_THAT(v.cause, Contains("stopped the other workers; rank 0: rank 1 is gone"));
  CHECK_THAT(v.cause, !Contains("hint"));

  end.records = {record(0, "internal", 5, "error: std::bad_alloc")};
  CHECK(launch::judge_attempt(end).may_restart);
}

TEST_CASE("restarts: bad input, divergence and a stop request are not restarted", "[launch]") {
  launch::AttemptEnd end;
  end.exit_code = 1;
  end.records = {record(1, "diverged", 3, "error: step 5: the loss is nan")};
  auto v = launch::judge_attempt(end);
  CHECK_FALSE(v.may_restart);
  CHECK_THAT(v.why_final, Contains("training diverged (rank 1: step 5: the loss is nan)") &&
                              Contains("trainer.on_nonfinite=rollback"));

  end.exit_code = 2;
  end.records = {record(0, "data", 3, "error: the training data changed since runs/x/checkpoint-4 was saved")};
  v = launch::judge_attempt(end);
  CHECK_FALSE(v.may_restart);
  CHECK_THAT(v.why_final, Contains("bad input (rank 0: the training data changed"));

  end.records.clear();  // exit 2 without a record (an error before the trainer wrote one)
  CHECK_FALSE(launch::judge_attempt(end).may_restart);

  end.exit_code = 143;
  end.stop_exit_codes = {130, 143};
  v = launch::judge_attempt(end);
  CHECK_FALSE(v.may_restart);
  CHECK_THAT(v.why_final, Contains("stopped on a signal (exit 143)"));

  end.exit_code = 137;
  end.stop_requested = true;
  v = launch::judge_attempt(end);
  CHECK_FALSE(v.may_restart);
  CHECK_THAT(v.why_final, Contains("asked to stop"));

  end = {};
  CHECK(launch::judge_attempt(end).finished);
}

TEST_CASE("restarts: failure records round-trip, earliest first, and torn ones are left out", "[launch]") {
  TempDir dir;
  CHECK(launch::read_failure_records(dir.path).empty());
  launch::write_failure_record(dir.path, record(1, "io", 20.5, "error: late"));
  launch::write_failure_record(dir.path, record(0, "diverged", 10.25, "error: early\nhint: h"));
  std::ofstream(dir.path / launch::kFailuresDir / "rank-2.json") << "{\"rank\": 2, \"kind\":";
  std::ofstream(dir.path / launch::kFailuresDir / "rank-3.json") << "{\"rank\": \"three\"}";
  const auto records = launch::read_failure_records(dir.path);
  REQUIRE(records.size() == 2);
  CHECK(records[0].rank == 0);
  CHECK(records[0].kind == "diverged");
  CHECK(records[0].message == "error: early\nhint: h");
  CHECK(records[0].time == 10.25);
  CHECK(records[1].rank == 1);
  launch::clear_failure_records(dir.path);
  CHECK(launch::read_failure_records(dir.path).empty());
  // A run directory that cannot be written is no error: the record is skipped.
  launch::write_failure_record("/proc/no-such-dir", record(0, "io", 1, "x"));
}

TEST_CASE("restarts: after a worker was killed, a peer's error does not veto the restart", "[launch]") {
  launch::AttemptEnd end;
  end.exit_code = 137;
  end.launcher_cause = "rank 1 (pid 42) was killed by signal 9 (Killed); stopped the other workers";
  end.stop_exit_codes = {130, 143};
  launch::FailureRecord r;
  r.kind = "checkpoint";
  r.message = "error: rank 1 did not write its shard";
  end.records = {r};
  CHECK(launch::judge_attempt(end).may_restart);
  // Without a death, the first record decides.
  end.exit_code = 2;
  CHECK_FALSE(launch::judge_attempt(end).may_restart);
}
