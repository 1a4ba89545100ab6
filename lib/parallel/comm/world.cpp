#include "parallel/comm/world.h"

#include <torch/torch.h>

#include "parallel/comm/mpi_communicator.h"
#include "parallel/comm/nccl_communicator.h"
#include "parallel/comm/rendezvous_store.h"
#include "util/error.h"
#include "util/log.h"

namespace hftrain::parallel {

std::unique_ptr<World> World::create(const launch::LaunchEnv& env, const config::DistributedConfig& config,
                                     const torch::Device& device) {
  std::unique_ptr<World> w(new World());
  w->env_ = env;
  w->device_ = device;
  w->config_ = config;
  if (!env.distributed()) {
    w->comm_ = std::make_shared<LocalCommunicator>();
    return w;
  }
  config::Backend backend = config.backend;
  if (backend == config::Backend::kAuto) backend = device.is_cuda() ? config::Backend::kNccl : config::Backend::kMpi;
  if (backend == config::Backend::kNccl && !device.is_cuda()) {
    throw util::ConfigError("distributed.backend=nccl needs CUDA devices, and this rank trains on the CPU",
                            "use distributed.backend=mpi (or auto) on CPUs");
  }
  if (backend == config::Backend::kMpi && device.is_cuda()) {
    throw util::ConfigError("distributed.backend=mpi moves CPU tensors, and this rank trains on " + device.str(),
                            "use distributed.backend=nccl (or auto) on GPUs");
  }
  const PhaseBudgets budgets = PhaseBudgets::from_config(config);
  const bool mpi_launched = env.launcher == launch::Launcher::kOpenMpi || env.launcher == launch::Launcher::kSlurm;

  // The rendezvous store: the launcher's, or hosted by rank 0 at MASTER_ADDR:MASTER_PORT, or (under
  // mpirun/srun without those) hosted by rank 0 on a free port announced through MPI.
  w->store_holder_ = std::make_unique<StoreHandle>();
  if (!env.master_addr.empty() && env.master_port != 0) {
    const bool host = !env.launcher_hosts_store && env.rank == 0;
    w->store_holder_->store = connect_store(env.master_addr, env.master_port, host, budgets.startup_s);
  } else {
    if (!mpi_launched) {
      throw util::ConfigError("no rendezvous address: MASTER_ADDR and MASTER_PORT are not set",
                              "set them to node 0's address and a free port");
    }
    mpi_init();
    w->uses_mpi_ = true;
    std::string address;
    if (env.rank == 0) {
      w->store_holder_->store = connect_store(host_name(), 0, true, budgets.startup_s);
      address = std::to_string(store_port(*w->store_holder_->store));
    }
    address = mpi_world_broadcast(env.rank == 0 ? host_name() + " " + address : std::string(), env.rank);
    if (env.rank != 0) {
      const size_t space = address.rfind(' ');
      w->store_holder_->store =
          connect_store(address.substr(0, space), std::stoi(address.substr(space + 1)), false, budgets.startup_s);
    }
  }
  w->store_ = store_key_values(w->store_holder_->store);
  w->monitor_ = std::make_unique<Monitor>(env.rank, env.world_size, budgets, store_board(w->store_.get()));
  PhaseScope startup(w->monitor_.get(), Phase::kStartup);

  if (backend == config::Backend::kMpi) {
    w->uses_mpi_ = true;
    if (mpi_launched) {
      mpi_init();
      w->comm_ = mpi_world(w->monitor_.get());
    } else {
      w->comm_ = mpi_join(*w->store_, env.rank, env.world_size, w->monitor_.get());
    }
    if (w->comm_->size() != env.world_size || w->comm_->rank() != env.rank) {
      throw util::DistributedError("MPI sees rank " + std::to_string(w->comm_->rank()) + " of " +
                                       std::to_string(w->comm_->size()) + ", the launcher said " + env.describe(),
                                   "under srun, use --mpi=pmix so that Open MPI sees the whole job");
    }
  } else {
    w->comm_ = make_nccl_communicator(&w->store_holder_->store, env.rank, env.world_size, device.index(), "world",
                                      w->monitor_.get());
  }
  w->comm_->barrier();
  util::log::debug("distributed: " + env.describe() + ", backend " + w->comm_->backend());
  return w;
}

World::~World() {
  if (broken_) {
    // A collective is stuck: the orderly shutdown would wait for it forever.
    // Leaked on purpose: their destructors would wait for it too.
    new std::shared_ptr<Communicator>(std::move(comm_));
    new std::shared_ptr<Communicator>(std::move(intra_));
    new std::shared_ptr<Communicator>(std::move(inter_));
    new std::shared_ptr<Communicator>(std::move(tp_));
    new std::shared_ptr<Communicator>(std::move(dp_));
    new std::shared_ptr<Communicator>(std::move(pp_));
    return;
  }
  pp_.reset();
  dp_.reset();
  tp_.reset();
  inter_.reset();
  intra_.reset();
  comm_.reset();
  monitor_.reset();
  if (uses_mpi_) mpi_finalize();
}

}  // namespace hftrain::parallel
