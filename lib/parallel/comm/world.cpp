#include "parallel/comm/world.h"

#include <unistd.h>

#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/torch.h>

#include "parallel/comm/mpi_communicator.h"
#include "parallel/comm/nccl_communicator.h"
#include "util/error.h"
#include "util/log.h"

namespace hftrain::parallel {

struct World::StoreHolder {
  c10::intrusive_ptr<c10d::Store> store;
};

namespace {

std::chrono::milliseconds to_ms(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000.0));
}

class C10dKeyValue final : public KeyValueStore {
 public:
  explicit C10dKeyValue(c10::intrusive_ptr<c10d::Store> store) : store_(std::move(store)) {}
  void set(const std::string& key, const std::string& value) override {
    guard("set " + key, [&] { store_->set(key, std::vector<uint8_t>(value.begin(), value.end())); });
  }
  std::string get(const std::string& key) override {
    std::vector<uint8_t> v;
    guard("waiting for " + key, [&] { v = store_->get(key); });
    return std::string(v.begin(), v.end());
  }
  std::string try_get(const std::string& key) override {
    std::string out;
    guard("reading " + key, [&] {
      if (store_->check({key})) {
        auto v = store_->get(key);
        out.assign(v.begin(), v.end());
      }
    });
    return out;
  }
  int64_t add(const std::string& key, int64_t delta) override {
    int64_t out = 0;
    guard("adding to " + key, [&] { out = store_->add(key, delta); });
    return out;
  }

 private:
  template <class F>
  void guard(const std::string& what, F&& f) {
    try {
      f();
    } catch (const std::exception& e) {
      throw util::DistributedError("rendezvous store: " + what + " failed: " + std::string(e.what()).substr(0, 300),
                                   "check that every rank was started and that rank 0 (or the launcher) is "
                                   "reachable at MASTER_ADDR:MASTER_PORT; distributed.startup_timeout bounds the wait");
    }
  }
  c10::intrusive_ptr<c10d::Store> store_;
};

class StoreBoard final : public StatusBoard {
 public:
  explicit StoreBoard(KeyValueStore* store) : store_(store) {}
  void publish(int rank, const std::string& status) override { store_->set("status/" + std::to_string(rank), status); }
  std::optional<std::string> read(int rank) override {
    std::string v = store_->try_get("status/" + std::to_string(rank));
    if (v.empty()) return std::nullopt;
    return v;
  }

 private:
  KeyValueStore* store_;
};

c10::intrusive_ptr<c10d::Store> connect_store(const std::string& host, int port, bool server, double timeout_s) {
  c10d::TCPStoreOptions o;
  o.port = static_cast<uint16_t>(port);
  o.isServer = server;
  o.waitWorkers = false;
  o.timeout = to_ms(timeout_s);
  try {
    return c10::make_intrusive<c10d::TCPStore>(host, o);
  } catch (const std::exception& e) {
    throw util::DistributedError(std::string(server ? "cannot host" : "cannot reach") + " the rendezvous store at " +
                                     host + ":" + std::to_string(port) + ": " + std::string(e.what()).substr(0, 300),
                                 server ? "pick a free MASTER_PORT (or --master-port)"
                                        : "check MASTER_ADDR/MASTER_PORT and that rank 0 (or the launcher) runs");
  }
}

std::string host_name() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

}  // namespace

struct StoreHost::Impl {
  c10::intrusive_ptr<c10d::Store> store;
};

StoreHost::~StoreHost() = default;

std::unique_ptr<StoreHost> StoreHost::start(int port, double timeout_s) {
  std::unique_ptr<StoreHost> h(new StoreHost());
  h->impl_ = std::make_unique<Impl>();
  h->impl_->store = connect_store("127.0.0.1", port, true, timeout_s);
  h->port_ = static_cast<c10d::TCPStore&>(*h->impl_->store).getPort();
  return h;
}

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
  w->store_holder_ = std::make_unique<StoreHolder>();
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
      address = std::to_string(static_cast<c10d::TCPStore&>(*w->store_holder_->store).getPort());
    }
    address = mpi_world_broadcast(env.rank == 0 ? host_name() + " " + address : std::string(), env.rank);
    if (env.rank != 0) {
      const size_t space = address.rfind(' ');
      w->store_holder_->store =
          connect_store(address.substr(0, space), std::stoi(address.substr(space + 1)), false, budgets.startup_s);
    }
  }
  w->store_ = std::make_unique<C10dKeyValue>(w->store_holder_->store);
  w->monitor_ =
      std::make_unique<Monitor>(env.rank, env.world_size, budgets, std::make_shared<StoreBoard>(w->store_.get()));
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

// Under tensor or pipeline parallelism, hybrid's node groups are cut from this rank's
// data-parallel group: its members on this node, and its members at the same place on every node
// (check_mesh makes each node hold as many of a group's members as the others).
World::NodePlace World::node_place() const {
  const int per_node = env_.local_world_size;
  NodePlace place;
  for (int d = 0; d < dp_size(); ++d) {
    if (mesh_rank(pp_rank(), d, tp_rank()) / per_node != rank() / per_node) continue;
    if (d < dp_rank()) ++place.index;
    ++place.count;
  }
  return place;
}

Communicator& World::intra_node() {
  if (!intra_ && dp_) {  // the data-parallel group's ranks on this node
    const NodePlace place = node_place();
    if (place.count == dp_size()) {
      intra_ = dp_;
    } else if (comm_->backend() == "mpi") {
      intra_ = mpi_split(*dp_, env_.node_rank, place.index, monitor_.get());
    } else {
      intra_ = make_nccl_communicator(&store_holder_->store, place.index, place.count, device_.index(),
                                      "dpnode" + std::to_string(env_.node_rank) + "-tp" + std::to_string(tp_rank()) +
                                          "-pp" + std::to_string(pp_rank()),
                                      monitor_.get());
    }
  }
  if (!intra_) {
    if (env_.local_world_size == env_.world_size) {
      intra_ = comm_;
    } else if (comm_->backend() == "mpi") {
      intra_ = mpi_split(*comm_, env_.node_rank, env_.local_rank, monitor_.get());
    } else {
      intra_ = make_nccl_communicator(&store_holder_->store, env_.local_rank, env_.local_world_size, device_.index(),
                                      "node" + std::to_string(env_.node_rank), monitor_.get());
    }
  }
  return *intra_;
}
Communicator& World::inter_node() {
  if (!inter_ && dp_) {  // the data-parallel group's ranks at this place of every node
    const NodePlace place = node_place();
    if (place.count == dp_size()) {
      inter_ = std::make_shared<LocalCommunicator>();
    } else if (comm_->backend() == "mpi") {
      inter_ = mpi_split(*dp_, place.index, env_.node_rank, monitor_.get());
    } else {
      inter_ = make_nccl_communicator(&store_holder_->store, dp_rank() / place.count, dp_size() / place.count,
                                      device_.index(),
                                      "dplocal" + std::to_string(place.index) + "-tp" + std::to_string(tp_rank()) +
                                          "-pp" + std::to_string(pp_rank()),
                                      monitor_.get());
    }
  }
  if (!inter_) {
    if (env_.local_world_size == env_.world_size) {
      inter_ = std::make_shared<LocalCommunicator>();
    } else if (comm_->backend() == "mpi") {
      inter_ = mpi_split(*comm_, env_.local_rank, env_.node_rank, monitor_.get());
    } else {
      inter_ = make_nccl_communicator(&store_holder_->store, env_.node_rank, env_.num_nodes, device_.index(),
                                      "local" + std::to_string(env_.local_rank), monitor_.get());
    }
  }
  return *inter_;
}

void World::check_mesh(const launch::LaunchEnv& env, const config::DistributedConfig& config) {
  const int64_t tp = config.tensor_parallel, pp = config.pipeline_parallel;
  if (tp <= 1 && pp <= 1) return;
  if (env.world_size % (tp * pp) != 0) {
    const std::string product = pp > 1 ? "distributed.tensor_parallel x distributed.pipeline_parallel = " +
                                             std::to_string(tp) + " x " + std::to_string(pp)
                                       : "distributed.tensor_parallel=" + std::to_string(tp);
    throw util::ConfigError(product + " does not divide the world of " + std::to_string(env.world_size) +
                                " ranks (world = data parallel x tensor parallel x pipeline parallel)",
                            "start a multiple of " + std::to_string(tp * pp) +
                                " processes, or set the layout's product to a divisor of " +
                                std::to_string(env.world_size));
  }
  if (config.strategy == config::Strategy::kHybrid && env.local_world_size % tp != 0) {
    throw util::ConfigError("distributed.strategy=hybrid with distributed.tensor_parallel=" + std::to_string(tp) +
                                " needs each node's " + std::to_string(env.local_world_size) +
                                " ranks to hold whole tensor-parallel groups",
                            "start a multiple of " + std::to_string(tp) + " processes per node");
  }
  const bool node_by_node = env.rank == env.node_rank * env.local_world_size + env.local_rank;
  if (config.strategy == config::Strategy::kHybrid && !node_by_node) {
    // The node groups are cut from the data-parallel groups by rank / local_world_size.
    throw util::ConfigError("distributed.strategy=hybrid with tensor or pipeline parallelism needs the ranks placed "
                                "node by node (rank " + std::to_string(env.rank) + " is local rank " +
                                std::to_string(env.local_rank) + " of node " + std::to_string(env.node_rank) + ")",
                            "start the job with a block distribution (Slurm: --distribution=block; mpirun: "
                            "--map-by slot), the same number of processes on every node");
  }
  if (config.strategy == config::Strategy::kHybrid && pp > 1) {
    // Each node holds as many members of a stage's data-parallel group as every other node that
    // holds any (ranks are placed node by node, the stages outermost).
    const int64_t per_stage = env.world_size / pp, per_node = env.local_world_size;
    if (per_stage % per_node != 0 && per_node % per_stage != 0) {
      throw util::ConfigError("distributed.strategy=hybrid with distributed.pipeline_parallel=" + std::to_string(pp) +
                                  " needs each node's " + std::to_string(per_node) + " ranks to hold whole stages or " +
                                  "equal parts of one (a stage has " + std::to_string(per_stage) + " ranks)",
                              "start a number of processes per node that divides " + std::to_string(per_stage) +
                                  " or is a multiple of it");
    }
  }
}

void World::set_mesh(int tensor_parallel, int pipeline_parallel) {
  tensor_parallel = std::max(1, tensor_parallel);
  pipeline_parallel = std::max(1, pipeline_parallel);
  if ((tensor_parallel == 1 && pipeline_parallel == 1) || tp_ || pp_) return;
  config::DistributedConfig mesh = config_;
  mesh.tensor_parallel = tensor_parallel;
  mesh.pipeline_parallel = pipeline_parallel;
  check_mesh(env_, mesh);
  tp_size_ = tensor_parallel;
  pp_size_ = pipeline_parallel;
  const int tp_index = tp_rank(), dp_index = dp_rank(), pp_index = pp_rank();
  const int tp_group = pp_index * dp_size() + dp_index;  // which tensor-parallel group
  const int dp_group = pp_index * tp_size_ + tp_index;   // which data-parallel group
  const int pipeline = dp_index * tp_size_ + tp_index;   // which pipeline
  if (comm_->backend() == "mpi") {
    tp_ = mpi_split(*comm_, tp_group, tp_index, monitor_.get());
    dp_ = mpi_split(*comm_, dp_group, dp_index, monitor_.get());
    pp_ = mpi_split(*comm_, pipeline, pp_index, monitor_.get());
  } else {
    tp_ = make_nccl_communicator(&store_holder_->store, tp_index, tp_size_, device_.index(),
                                 "tp" + std::to_string(tp_group), monitor_.get());
    dp_ = make_nccl_communicator(&store_holder_->store, dp_index, dp_size(), device_.index(),
                                 "dp" + std::to_string(dp_group), monitor_.get());
    pp_ = make_nccl_communicator(&store_holder_->store, pp_index, pp_size_, device_.index(),
                                 "pp" + std::to_string(pipeline), monitor_.get());
  }
  if (is_main()) {
    std::string line = "mesh: " + std::to_string(size()) + " ranks = data parallel " + std::to_string(dp_size()) +
                       " x tensor parallel " + std::to_string(tp_size_) + " x pipeline parallel " +
                       std::to_string(pp_size_);
    if (tp_size_ > 1) {
      line += " (tensor-parallel groups: ranks 0-" + std::to_string(tp_size_ - 1) + ", " + std::to_string(tp_size_) +
              "-" + std::to_string(2 * tp_size_ - 1) + ", ...)";
    }
    if (pp_size_ > 1) {
      std::string stages;
      for (int s = 0; s < pp_size_; ++s) stages += (s ? ", " : "") + std::to_string(mesh_rank(s, 0, 0));
      line += " (rank 0's pipeline: ranks " + stages + ")";
    }
    util::log::info(line);
  }
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
