// Automatic restarts (`hftrain run --max-restarts N`): how a failed attempt is told apart from one
// that should not be repeated, how long to wait before the next, and the failure records through
// which the workers tell the supervisor why they stopped.
//
// Each worker that stops on an error writes <run_dir>/failures/rank-R.json (one file per rank, so
// ranks never race for one); a worker killed outright writes nothing, and the launcher's own words
// ("rank 1 (pid 42) was killed by signal 9") are the cause. The records live in the run directory
// because that is the one place every launcher's workers share with the supervisor (hftrain's own
// launcher, mpirun, srun on another node); `hftrain runs` reads them too.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace hftrain::launch {

inline constexpr const char* kFailuresDir = "failures";

struct FailureRecord {
  int rank = 0;
  std::string kind;     // usage, config, data, checkpoint, io, distributed, diverged, internal
  int exit_code = 1;
  std::string message;  // the error as the user saw it ("error: ...", "hint: ...")
  int attempt = 0;      // 0 for the first attempt, k for the k-th restart
  double time = 0;      // seconds since the epoch, when it was written
};

// Best effort: a record that cannot be written (read-only directory, full disk) is skipped; the
// error itself still reaches the user and the exit code.
void write_failure_record(const std::filesystem::path& run_dir, const FailureRecord& record);
// Every rank's record, the earliest first; records that cannot be read are left out.
std::vector<FailureRecord> read_failure_records(const std::filesystem::path& run_dir);
// Removes the records of an earlier attempt (before the next one starts).
void clear_failure_records(const std::filesystem::path& run_dir);

// Whether an error of `kind` can pass by itself: bad input and divergence come back on every
// attempt (the same recipe, the same data, the same weights), a lost node or a full disk may not.
bool kind_may_pass(const std::string& kind);

struct RestartOptions {
  int max_restarts = 0;
  double backoff_seconds = 2;       // before the first restart; doubled each time
  double max_backoff_seconds = 120;
};

// The wait before restart `restart` (1 for the first).
double restart_delay(const RestartOptions& options, int restart);

// How one attempt ended, as the supervisor saw it.
struct AttemptEnd {
  int exit_code = 0;
  bool stop_requested = false;             // a signal reached the supervisor (Ctrl-C, scancel)
  std::string launcher_cause;              // the launcher's words, or "" (one process)
  std::vector<FailureRecord> records;      // the workers' records, earliest first
  std::vector<int> stop_exit_codes;        // codes of workers that stopped on a signal, saving a checkpoint
};

struct AttemptVerdict {
  bool finished = false;  // exit 0
  bool may_restart = false;
  std::string cause;      // one line: what went wrong
  std::string why_final;  // when it may not restart: why not (bad input, divergence, a stop request)
};

AttemptVerdict judge_attempt(const AttemptEnd& end);

}  // namespace hftrain::launch
