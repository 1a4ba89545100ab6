// `run` and `resume` with --max-restarts N (or --launch-with CMD): this process supervises the job
// instead of training. It starts the job (one process, hftrain's launcher with --nproc-per-node,
// or the command of --launch-with, such as mpirun or srun, followed by hftrain), and when the job
// fails for a reason that may pass (lib/launch/restarts.h) it waits (doubling back-off) and starts
// it again, from the newest checkpoint that verifies, up to N times; each restart and its cause is
// logged, and the last cause when it gives up. The processes it starts carry
// `--supervised-attempt K` (K = 0, 1, ...): they leave the run directory's lock and its decisions
// (--resume, --overwrite) to the supervisor, and attempts after the first resume.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "launcher.h"

namespace hftrain::app {

// True when this process should supervise: restarts or --launch-with asked for, and this process
// is neither a supervised attempt nor a worker of a launcher. Throws UsageError for flags that do
// not go together (--launch-with with --nproc-per-node; restarts across several nodes of hftrain's
// own launcher).
bool should_supervise(const LaunchArgs& args);

// Runs the job to its end and returns its exit code (the last attempt's). `run_dir` holds the
// checkpoints and the workers' failure records; `stop_exit_codes` are the codes of workers that
// stopped on a signal after saving a checkpoint (no restart for those).
int supervise(const LaunchArgs& args, const std::vector<std::string>& command_line,
              const std::filesystem::path& run_dir, const std::vector<int>& stop_exit_codes);

// For a supervised attempt (K = args.attempt): makes HFTRAIN_RESTART_COUNT=K visible to the
// process (and anything it starts), and logs that it is a restart.
void note_supervised_attempt(const LaunchArgs& args);

}  // namespace hftrain::app
