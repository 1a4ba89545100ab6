// What a run directory says about its run, for `hftrain runs` and `hftrain sweep`: its status
// record (status.json, written by the run's rank 0), its metrics, its checkpoints and whether a
// process holds it.
//
// status.json: {"status": "running" | "finished" | "interrupted" | "failed", "started_at" (the
// run's first start, seconds since the epoch), "process_started_at", "ended_at", "step",
// "total_steps", "error", "host", "pid"}. A run whose record says running but whose lock no process
// holds died without a word (killed): it counts as failed.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace hftrain::train {

inline constexpr const char* kRunStatusFile = "status.json";

struct RunStatusRecord {
  std::string status = "running";
  double started_at = 0;
  double process_started_at = 0;
  double ended_at = 0;  // 0 while running
  int64_t step = 0;
  int64_t total_steps = 0;
  std::string error;
  std::string host;
  int64_t pid = 0;
};

// Crash-safe; best effort (a record that cannot be written is skipped with a warning: it is for
// the run table, not for training).
void write_run_status(const std::filesystem::path& run_dir, const RunStatusRecord& record);
std::optional<RunStatusRecord> read_run_status(const std::filesystem::path& run_dir);
// The record of a process starting in `run_dir`: a resume keeps the run's first start time.
RunStatusRecord starting_status(const std::filesystem::path& run_dir, bool resuming, int64_t step, int64_t total_steps);

struct RunSummary {
  std::filesystem::path dir;
  std::string name;    // run.name from config.yaml
  std::string status;  // running, finished, interrupted, failed
  std::string cause;   // failed: the error (or "died without a word")
  int64_t step = 0;
  int64_t total_steps = 0;
  std::optional<double> best_eval_loss;
  std::optional<double> final_eval_loss;
  std::optional<double> last_loss;
  std::optional<double> tokens_per_s;  // the last logged step's
  std::optional<std::filesystem::path> newest_checkpoint;  // the newest that verifies
  std::optional<double> started_at;
  std::optional<double> duration_s;  // first start to the end (or now, while running)
};

// Reads `run_dir` (a folder with config.yaml). `verify`: find the newest checkpoint that verifies
// (reads every checkpoint file's checksum, newest first); otherwise the newest by step.
RunSummary summarize_run(const std::filesystem::path& run_dir, bool verify = true);

// The run directories at or below `root` (folders holding config.yaml, not inside a checkpoint
// or final/), sorted by path.
std::vector<std::filesystem::path> find_runs(const std::filesystem::path& root);

// Whether a process holds the run directory's lock (ckpt/run_lock.h): a run trains there now.
bool run_dir_busy(const std::filesystem::path& run_dir);

}  // namespace hftrain::train
