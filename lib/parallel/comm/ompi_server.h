// Open MPI 4's `ompi-server`: the rendezvous process MPI_Comm_connect/accept needs between
// processes that mpirun did not start (mpi_join under hftrain's own launcher or torchrun). Rank 0
// starts one and publishes its URI; mpi_finalize ends it. Torch- and MPI-free.
#pragma once

#include <string>

namespace hftrain::parallel {

// Starts `ompi-server` (ended with this process if it dies) and returns its URI, what
// OMPI_MCA_pmix_server_uri takes. Throws DistributedError when it is missing, ends at once, or
// reports no address within `budget_s`.
std::string start_ompi_server(double budget_s);
// Ends the server this process started, if any.
void stop_ompi_server();

// hftrain, not the user, starts MPI under its own launcher; Open MPI refuses root unless told.
void allow_mpi_as_root();

}  // namespace hftrain::parallel
