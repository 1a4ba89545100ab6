// hftrain's own launcher: starts one worker process per local device, relays their output with
// a rank prefix, forwards Ctrl-C / SIGTERM to every worker, and when one worker fails stops the
// others and says which rank failed and how. No worker outlives the launcher: each runs in its
// own process group with PR_SET_PDEATHSIG, so even a SIGKILLed launcher takes them down.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace hftrain::launch {

struct SpawnOptions {
  std::string program;             // the executable (normally this one, /proc/self/exe)
  std::vector<std::string> argv;   // argv[0] onwards, the same for every worker
  int nproc_per_node = 1;
  int node_rank = 0;
  int num_nodes = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;             // the rendezvous store, already listening
  // Extra variables for every worker (on top of RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,
  // GROUP_RANK, MASTER_ADDR, MASTER_PORT, HFTRAIN_LAUNCHER, HFTRAIN_NNODES).
  std::vector<std::pair<std::string, std::string>> env;
  double kill_grace_seconds = 10;  // after a worker failed: SIGTERM to the rest, SIGKILL after this
  // After a signal was forwarded, the workers save a checkpoint together and exit together: once
  // one has exited, the rest get this long before SIGKILL (one stuck in a collective with a
  // departed peer would otherwise keep the launcher waiting forever).
  double stop_grace_seconds = 120;
  // false: one process that is not part of a distributed job (the restart supervisor's child,
  // apps/hftrain/supervisor.h): none of the launcher's variables, only `env`, and its lines go
  // out as they are, without the rank prefix. nproc_per_node must then be 1.
  bool distributed = true;
};

struct SpawnResult {
  int exit_code = 0;    // 0 when every worker succeeded; else the first failure's code (128+N for a signal)
  // What went wrong, for the launcher's last line: "rank 1 (pid 4242) was killed by signal 9
  // (Killed); stopped the other workers", or "rank 0 did not stop within 120 s of rank 1 (pid 4242)
  // ending after the signal; killed". Empty when every worker succeeded or stopped on a signal.
  std::string failure;
  // A signal reached the launcher and was forwarded: the job was asked to stop.
  bool stop_requested = false;
};

// Runs the workers to the end. Lines a worker writes to stdout or stderr reach the launcher's
// stdout or stderr as "[rank R] line". The first worker to fail (non-zero exit or a signal) makes
// the launcher SIGTERM the rest (SIGKILL after kill_grace_seconds). SIGINT/SIGTERM/SIGHUP to the
// launcher are forwarded to every worker, with no deadline while all of them run (they may be
// saving a checkpoint); once one has exited, the rest get stop_grace_seconds. A second signal
// kills them at once. Throws util::ConfigError when a worker cannot be started (pipe or fork
// failing), after killing the workers already started; no descriptor is left open.
SpawnResult run_workers(const SpawnOptions& options);

}  // namespace hftrain::launch
