// `run` and `resume` with --nproc-per-node: this process becomes the launcher of one worker per
// local device (lib/launch/spawner.h), each running the same command line. A process started
// by the launcher (HFTRAIN_LAUNCHER set) is a worker and ignores these flags.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launch/spawner.h"

namespace CLI {
class App;
}

namespace hftrain::app {

struct LaunchArgs {
  int nproc_per_node = 0;  // 0: no launcher
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr;
  int master_port = 0;     // 0: a free port (single node only)
  // Automatic restarts (supervisor.h).
  int max_restarts = 0;
  double restart_backoff = 2;  // seconds before the first restart, doubled each time
  std::string launch_with;     // "mpirun -np 8 ...", "srun": the job is started (and restarted) through it
  int attempt = -1;            // --supervised-attempt K: this process is attempt K of a supervised job
  std::string restart_from;    // --supervised-from DIR: the checkpoint its supervisor chose for a restart
  bool supervised() const { return attempt >= 0; }
};

void add_launch_options(CLI::App* sub, LaunchArgs& args);
// True when this process should start workers instead of training.
bool should_launch(const LaunchArgs& args);
// Hosts the rendezvous store (node 0), starts the workers with `command_line`, waits for them;
// returns the exit code (the first failed worker's). Throws UsageError for inconsistent flags.
int launch_workers(const LaunchArgs& args, const std::vector<std::string>& command_line);
// The same, returning how the workers ended (for the supervisor), with `env` added to theirs;
// the failure is not logged.
launch::SpawnResult start_workers(const LaunchArgs& args, const std::vector<std::string>& command_line,
                                  const std::vector<std::pair<std::string, std::string>>& env = {});

}  // namespace hftrain::app
