// What `run` and `resume` share once the config is resolved: the run directory, the log file,
// the signal handlers, the trainer (restored from a checkpoint when resuming), the final model
// and the exit code.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "ckpt/locate.h"
#include "ckpt/run_lock.h"
#include "config/resolve.h"

namespace hftrain::app {

struct TrainJob {
  config::ResolvedConfig resolved;
  std::optional<std::filesystem::path> resume_from;  // a verified checkpoint directory
  bool force = false;                                // resume --force: accept changed data
  std::vector<std::string> resume_notes;             // what the resume policy accepted, for the log
  std::vector<std::string> command_line;
};

// Trains and returns the exit code: 0, or the signal exit code after SIGINT/SIGTERM.
int run_train_job(const TrainJob& job);

// Checks `now` against the checkpoint's own config (resume policy, ckpt/resume_policy.h) and
// returns the notes to log; throws ConfigError for refused changes.
std::vector<std::string> plan_resume(const ckpt::LocatedCheckpoint& checkpoint, const config::ResolvedConfig& now,
                                     bool force);

// The run directory's lock (ckpt/run_lock.h), taken by the process that owns the directory: a
// process on its own, hftrain's launcher on node 0 (`node_rank`; its workers follow it), rank 0
// under mpirun or srun. nullopt for every other process. Throws what RunDirLock::acquire throws.
std::optional<ckpt::RunDirLock> lock_run_dir(const std::filesystem::path& run_dir, int node_rank);

// --overwrite, and a restart with no checkpoint to resume from: removes what an earlier run left
// that would mix with the new one (checkpoints, staging folders, latest, final/, metrics.jsonl,
// event files, failures/, status.json, mlflow.json and mlflow-pending.json: a new run is a new
// MLflow run). train.log is kept (the new run appends to it). Throws IoError naming the entry.
void remove_earlier_run(const std::filesystem::path& run_dir);

// The exit codes of a job whose workers stopped on SIGINT/SIGTERM after saving a checkpoint
// (checkpoint.signal_exit_code, else 128 + the signal).
std::vector<int> stop_exit_codes(const config::Config& cfg);

// The hash of a config's values that a checkpoint's manifest records.
std::string config_hash(const config::ResolvedConfig& resolved);

}  // namespace hftrain::app
