// The World's mesh: tensor, data and pipeline parallelism's groups cut from the world, and hybrid
// sharding's node groups cut from the data-parallel group.
#include "parallel/comm/world.h"

#include <torch/torch.h>

#include "parallel/comm/mpi_communicator.h"
#include "parallel/comm/nccl_communicator.h"
#include "parallel/comm/rendezvous_store.h"
#include "util/error.h"
#include "util/log.h"

namespace hftrain::parallel {

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
    const std::string product =
        pp > 1 ? "distributed.tensor_parallel x distributed.pipeline_parallel = " + std::to_string(tp) + " x " +
                     std::to_string(pp)
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
    throw util::ConfigError(
        "distributed.strategy=hybrid with tensor or pipeline parallelism needs the ranks placed "
        "node by node (rank " +
            std::to_string(env.rank) + " is local rank " + std::to_string(env.local_rank) + " of node " +
            std::to_string(env.node_rank) + ")",
        "start the job with a block distribution (Slurm: --distribution=block; mpirun: "
        "--map-by slot), the same number of processes on every node");
  }
  if (config.strategy == config::Strategy::kHybrid && pp > 1) {
    // Each node holds as many members of a stage's data-parallel group as every other node that
    // holds any (ranks are placed node by node, the stages outermost).
    const int64_t per_stage = env.world_size / pp, per_node = env.local_world_size;
    if (per_stage % per_node != 0 && per_node % per_stage != 0) {
      throw util::ConfigError(
          "distributed.strategy=hybrid with distributed.pipeline_parallel=" + std::to_string(pp) +
              " needs each node's " + std::to_string(per_node) + " ranks to hold whole stages or " +
              "equal parts of one (a stage has " + std::to_string(per_stage) + " ranks)",
          "start a number of processes per node that divides " + std::to_string(per_stage) + " or is a multiple of it");
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

}  // namespace hftrain::parallel
