// Open MPI for CPU tensors. All MPI calls after start-up run on one engine thread per process
// (MPI_THREAD_SERIALIZED), so a collective is asynchronous for the training loop (it overlaps
// backward) and waiting on it can time out: the engine thread stays blocked in MPI while the
// waiting thread reports which ranks did not arrive (monitor.h).
//
// Two ways to form the world:
//   - under mpirun or srun: MPI_COMM_WORLD (mpi_world);
//   - under hftrain's own launcher or torchrun, whose processes MPI did not start: every process
//     starts as an MPI singleton and they join with MPI_Comm_connect/accept on a port whose name
//     goes through the rendezvous store (mpi_join). Open MPI 4 needs its `ompi-server` for
//     that between separately started processes: rank 0 starts one and publishes its URI.
#pragma once

#include <memory>
#include <string>

#include "parallel/comm/communicator.h"
#include "parallel/comm/kv_store.h"
#include "parallel/comm/monitor.h"

namespace hftrain::parallel {

// MPI_Init_thread once per process (idempotent). Throws DistributedError if MPI cannot start.
void mpi_init();
bool mpi_is_initialized();
// Stops the engine thread and calls MPI_Finalize; skipped after a timeout (a blocked engine).
void mpi_finalize();

// The communicator over MPI_COMM_WORLD.
std::shared_ptr<Communicator> mpi_world(Monitor* monitor);
// Broadcasts a string from rank 0 of MPI_COMM_WORLD (before the engine starts: start-up only).
std::string mpi_world_broadcast(const std::string& value, int world_rank);

// Joins `world_size` separately started singletons into one communicator ordered by `rank`.
// `store` carries the ompi-server URI and the port name; call this BEFORE mpi_init() (the URI
// must be in the environment when MPI starts).
std::shared_ptr<Communicator> mpi_join(KeyValueStore& store, int rank, int world_size, Monitor* monitor);

// A sub-communicator of an MPI communicator: ranks with the same `color`, ordered by `key`.
std::shared_ptr<Communicator> mpi_split(Communicator& parent, int color, int key, Monitor* monitor);

}  // namespace hftrain::parallel
