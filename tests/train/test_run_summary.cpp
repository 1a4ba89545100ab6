// What a run directory says about its run (train/report/run_summary.h): the status record and what
// overrides it (a held lock: running; a record saying running with no holder: died), the
// metrics, the newest checkpoint, and which folders are runs.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>

#include "ckpt/run_lock.h"
#include "launch/restarts.h"
#include "train/report/run_summary.h"

using namespace hftrain;
namespace fs = std::filesystem;

namespace {

struct RunDir {
  fs::path path = fs::temp_directory_path() / ("hftrain-run-summary-" + std::to_string(::getpid()));
  RunDir() {
    fs::remove_all(path);
    fs::create_directories(path / "run");
    std::ofstream(path / "run" / "config.yaml") << "# Resolved\nrun:\n  name: tiny  # default\n  seed: 1  # default\n";
    std::ofstream(path / "run" / "metrics.jsonl")
        << R"({"step": 1, "loss": 3.0, "tokens_per_s": 100.0})" "\n"
        << R"({"step": 2, "loss": 2.5, "tokens_per_s": 120.0})" "\n"
        << R"({"step": 2, "eval_loss": 2.75})" "\n"
        << R"({"step": 4, "loss": 2.0, "tokens_per_s": 130.0})" "\n"
        << R"({"step": 4, "eval_loss": 2.9})" "\n";
  }
  ~RunDir() { fs::remove_all(path); }
  fs::path run() const { return path / "run"; }
};

}  // namespace

TEST_CASE("run summary: a finished run's record and metrics", "[train]") {
  RunDir d;
  train::RunStatusRecord r = train::starting_status(d.run(), false, 0, 4);
  r.status = "finished";
  r.step = 4;
  r.ended_at = r.started_at + 90;
  train::write_run_status(d.run(), r);
  const auto s = train::summarize_run(d.run(), false);
  CHECK(s.name == "tiny");
  CHECK(s.status == "finished");
  CHECK(s.step == 4);
  CHECK(s.total_steps == 4);
  CHECK(*s.best_eval_loss == 2.75);
  CHECK(*s.final_eval_loss == 2.9);
  CHECK(*s.last_loss == 2.0);
  CHECK(*s.tokens_per_s == 130.0);
  CHECK(*s.duration_s == Approx(90));
  CHECK_FALSE(s.newest_checkpoint);
  // A resume keeps the first start; a new run does not.
  CHECK(train::starting_status(d.run(), true, 4, 8).started_at == r.started_at);
}

TEST_CASE("run summary: running only while the lock is held, and a dead runner is a failure with its cause",
          "[train]") {
  RunDir d;
  train::write_run_status(d.run(), train::starting_status(d.run(), false, 0, 10));
  {
    const auto lock = ckpt::RunDirLock::acquire(d.run());
    CHECK(train::run_dir_busy(d.run()));
    CHECK(train::summarize_run(d.run(), false).status == "running");
  }
  CHECK_FALSE(train::run_dir_busy(d.run()));
  auto s = train::summarize_run(d.run(), false);
  CHECK(s.status == "failed");
  CHECK(s.cause == "the process ended without a word (killed?)");
  launch::FailureRecord f;
  f.kind = "io";
  f.message = "error: disk full\nhint: free some space";
  f.time = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  launch::write_failure_record(d.run(), f);
  s = train::summarize_run(d.run(), false);
  CHECK(s.cause == "disk full");
}

TEST_CASE("run summary: a run without a record, and which folders are runs", "[train]") {
  RunDir d;
  fs::create_directories(d.run() / "checkpoint-4");
  std::ofstream(d.run() / "checkpoint-4" / "config.yaml") << "run:\n";
  fs::create_directories(d.run() / "final");
  std::ofstream(d.run() / "final" / "config.yaml") << "x";
  fs::create_directories(d.path / "sweep-1" / "lr=1");
  std::ofstream(d.path / "sweep-1" / "lr=1" / "config.yaml") << "run:\n  name: p  # x\n";
  fs::create_directories(d.path / "empty");
  const auto s = train::summarize_run(d.run(), false);
  CHECK(s.status == "finished");  // final/ is there
  REQUIRE(s.newest_checkpoint);
  CHECK(s.newest_checkpoint->filename() == "checkpoint-4");
  CHECK(s.started_at);
  const auto runs = train::find_runs(d.path);
  REQUIRE(runs.size() == 2);
  CHECK(runs[0] == d.run());
  CHECK(runs[1] == d.path / "sweep-1" / "lr=1");
  CHECK(train::summarize_run(runs[1], false).name == "p");
}
