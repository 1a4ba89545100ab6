#include "launcher.h"

#include <algorithm>
#include <iostream>
#include <thread>

#include <CLI/CLI.hpp>

#include "parallel/comm/world.h"
#include "launch/launch_env.h"
#include "launch/spawner.h"
#include "util/env.h"
#include "util/error.h"
#include "util/log.h"

namespace hftrain::app {

void add_launch_options(CLI::App* sub, LaunchArgs& a) {
  sub->add_option("--nproc-per-node", a.nproc_per_node,
                  "Start this many worker processes on this node (one per GPU; any number on CPUs)")
      ->check(CLI::Range(1, 1024))
      ->group("Launcher");
  sub->add_option("--nnodes", a.nnodes, "Number of nodes (run the same command on each, with its --node-rank)")
      ->check(CLI::Range(1, 100000))
      ->group("Launcher");
  sub->add_option("--node-rank", a.node_rank, "This node's index, 0 .. nnodes-1")
      ->check(CLI::NonNegativeNumber)
      ->group("Launcher");
  sub->add_option("--master-addr", a.master_addr, "Address of node 0, where the rendezvous store listens")
      ->group("Launcher");
  sub->add_option("--master-port", a.master_port, "Port of the rendezvous store (default: a free port on one node)")
      ->check(CLI::Range(0, 65535))
      ->group("Launcher");
  sub->add_option("--max-restarts", a.max_restarts,
                  "Restart the job from its newest checkpoint that verifies, up to N times, when a worker dies or "
                  "fails for a reason that may pass (not bad input, not divergence)")
      ->check(CLI::Range(0, 1000))
      ->group("Restarts");
  sub->add_option("--restart-backoff", a.restart_backoff,
                  "Seconds before the first restart, doubled for each next (at most 120)")
      ->check(CLI::Range(0.0, 3600.0))
      ->group("Restarts");
  sub->add_option("--launch-with", a.launch_with,
                  "Start the job through this launcher command and restart it as a whole, e.g. \"mpirun -np 8 "
                  "--hostfile hosts\" or \"srun\" (words split at spaces; hftrain and its arguments follow)")
      ->group("Restarts");
  // Set by the supervisor on the processes it starts; not for people.
  sub->add_option("--supervised-attempt", a.attempt)->check(CLI::NonNegativeNumber)->group("");
  sub->add_option("--supervised-from", a.restart_from)->group("");
}

bool should_launch(const LaunchArgs& a) {
  return a.nproc_per_node > 0 && !util::Environment::process().get(launch::kLauncherVar);
}

int launch_workers(const LaunchArgs& a, const std::vector<std::string>& command_line) {
  const launch::SpawnResult r = start_workers(a, command_line);
  if (!r.failure.empty()) {
    util::log::error("launcher: " + r.failure);
  }
  return r.exit_code;
}

launch::SpawnResult start_workers(const LaunchArgs& a, const std::vector<std::string>& command_line,
                                  const std::vector<std::pair<std::string, std::string>>& env_add) {
  if (a.node_rank >= a.nnodes) {
    throw util::UsageError(
        "--node-rank " + std::to_string(a.node_rank) + " is not below --nnodes " + std::to_string(a.nnodes),
        "number the nodes 0 .. nnodes-1");
  }
  if (a.nnodes > 1 && (a.master_addr.empty() || a.master_port == 0)) {
    throw util::UsageError("--nnodes " + std::to_string(a.nnodes) + " needs --master-addr and --master-port",
                           "give every node node 0's address and an agreed free port");
  }
  launch::SpawnOptions o;
  o.program = "/proc/self/exe";
  o.argv = command_line;
  o.nproc_per_node = a.nproc_per_node;
  o.node_rank = a.node_rank;
  o.num_nodes = a.nnodes;
  o.master_addr = a.master_addr.empty() ? "127.0.0.1" : a.master_addr;
  o.env = env_add;
  // Threads: as torchrun does, the workers share the cores instead of each taking all of them
  // (LibTorch's intra-op pool, and Open MPI's busy polling, would otherwise fight over them).
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const auto& env = util::Environment::process();
  if (!env.get("OMP_NUM_THREADS")) {
    const unsigned threads = std::max(1u, cores / static_cast<unsigned>(a.nproc_per_node));
    o.env.emplace_back("OMP_NUM_THREADS", std::to_string(threads));
    util::log::info("launcher: OMP_NUM_THREADS=" + std::to_string(threads) + " per worker (" + std::to_string(cores) +
                    " cores; set OMP_NUM_THREADS to choose)");
  }
  if (static_cast<unsigned>(a.nproc_per_node) >= cores && !env.get("OMPI_MCA_mpi_yield_when_idle")) {
    o.env.emplace_back("OMPI_MCA_mpi_yield_when_idle", "1");  // oversubscribed: wait politely
  }
  std::unique_ptr<parallel::StoreHost> store;
  if (a.node_rank == 0) {
    store = parallel::StoreHost::start(a.master_port, 600);
    o.master_port = store->port();
  } else {
    o.master_port = a.master_port;
  }
  util::log::info("launcher: starting " + std::to_string(a.nproc_per_node) + " workers on node " +
                  std::to_string(a.node_rank) + " of " + std::to_string(a.nnodes) + " (rendezvous " + o.master_addr +
                  ":" + std::to_string(o.master_port) + "); rank 0 logs here, every rank to its log file");
  return launch::run_workers(o);
}

}  // namespace hftrain::app
