// Who started this process and where it sits in the job: hftrain's own launcher, torchrun,
// Open MPI's mpirun, Slurm's srun, or nobody (a single process). Read from the environment
// variables each of them sets, so one binary works under all of them.
#pragma once

#include <string>

#include "util/env.h"

namespace hftrain::launch {

enum class Launcher {
  kNone,      // a single process, started by hand
  kHftrain,   // `hftrain run --nproc-per-node N`: RANK, WORLD_SIZE, ... plus HFTRAIN_LAUNCHER
  kTorchrun,  // torchrun (TORCHELASTIC_RUN_ID plus RANK, WORLD_SIZE, ...)
  kOpenMpi,   // mpirun -np N (OMPI_COMM_WORLD_*)
  kSlurm,     // srun (SLURM_PROCID, SLURM_NTASKS, ...)
};

const char* launcher_name(Launcher launcher);

struct LaunchEnv {
  Launcher launcher = Launcher::kNone;
  int rank = 0;              // this process in the job, 0 .. world_size-1
  int world_size = 1;
  int local_rank = 0;        // this process on its node: picks the CUDA device
  int local_world_size = 1;  // processes on this node
  int node_rank = 0;         // rank / local_world_size where the launcher does not say
  int num_nodes = 1;
  // Where the rendezvous store listens. Empty / 0 when the launcher gives none (mpirun, Slurm
  // without MASTER_ADDR): rank 0 then hosts it and tells the others through MPI.
  std::string master_addr;
  int master_port = 0;
  // The store is hosted by the launcher (hftrain's own, torchrun's agent), not by rank 0.
  bool launcher_hosts_store = false;

  bool distributed() const { return world_size > 1; }
  // "rank 1 of 4 (local 1 of 2, node 0 of 2), started by mpirun"
  std::string describe() const;
};

// Variables hftrain's own launcher sets on its workers besides torchrun's.
inline constexpr const char* kLauncherVar = "HFTRAIN_LAUNCHER";  // "1"

// Reads the launcher's variables. The launchers are recognised in this order: hftrain's own,
// torchrun, Open MPI, Slurm (srun inside an mpirun allocation is Open MPI's). Throws
// util::ConfigError naming the variable when a value is malformed or inconsistent (a rank
// outside the world, a local size that does not divide the world where nodes must be equal).
LaunchEnv detect_launch_env(const util::Environment& env);

}  // namespace hftrain::launch
