// The processes of one job as the training loop sees them: this rank, the communicator over all
// ranks (and, for hybrid sharding, over this node's ranks and across nodes), the rendezvous
// store and the monitor that times collectives by phase. One process without a launcher gets a
// world of one with no MPI, no store and no threads.
#pragma once

#include <memory>
#include <string>

#include <torch/types.h>

#include "config/config.h"
#include "parallel/comm/communicator.h"
#include "parallel/comm/kv_store.h"
#include "parallel/comm/monitor.h"
#include "launch/launch_env.h"

namespace hftrain::parallel {

struct StoreHandle;  // rendezvous_store.h

// The rendezvous store as hftrain's own launcher hosts it on node 0 (workers connect to it as
// clients). Port 0 picks a free port.
class StoreHost {
 public:
  ~StoreHost();
  static std::unique_ptr<StoreHost> start(int port, double timeout_s);
  int port() const { return port_; }

 private:
  StoreHost() = default;
  std::unique_ptr<StoreHandle> impl_;
  int port_ = 0;
};

class World {
 public:
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  int rank() const { return env_.rank; }
  int size() const { return env_.world_size; }
  int local_rank() const { return env_.local_rank; }
  bool is_main() const { return env_.rank == 0; }
  const launch::LaunchEnv& env() const { return env_; }

  Communicator& comm() { return *comm_; }
  // Hybrid sharding: the ranks of this node, and the ranks with this local rank on every node;
  // under tensor or pipeline parallelism those of this rank's data-parallel group. Created on first use (a
  // collective over the world, or the data-parallel group).
  Communicator& intra_node();
  Communicator& inter_node();

  // The mesh of tensor, data and pipeline parallelism, tp innermost, then dp, then pp: rank =
  // (pp_rank * dp + dp_rank) * tp + tp_rank. Groups of `tensor_parallel` consecutive ranks (inside
  // a node where it divides the node's ranks) split each block's matrices; the ranks at the same
  // place of every group of a pipeline stage form a data-parallel group, over which the sharding
  // strategies run and the data is split; the ranks with the same (dp, tp) place form a pipeline,
  // one rank per stage. Collective, once, before the data and the model are set up; without it (or
  // with 1 x 1) the data-parallel group is the world. Throws ConfigError when tp x pp does not
  // divide the world size.
  void set_mesh(int tensor_parallel, int pipeline_parallel);
  // The mesh's rules on the job's shape alone (the world size, each node's ranks under hybrid):
  // throws ConfigError, before any rendezvous, when set_mesh would.
  static void check_mesh(const launch::LaunchEnv& env, const config::DistributedConfig& config);
  int tp_size() const { return tp_size_; }
  int tp_rank() const { return rank() % tp_size_; }
  int pp_size() const { return pp_size_; }
  int pp_rank() const { return rank() / (tp_size_ * dp_size()); }
  int dp_size() const { return size() / (tp_size_ * pp_size_); }
  int dp_rank() const { return rank() / tp_size_ % dp_size(); }
  // Which tensor-parallel group this rank is in (pp_rank * dp + dp_rank): the ranks that draw the
  // same numbers from their default generators.
  int tp_group_index() const { return rank() / tp_size_; }
  // The world rank at (pp, dp, tp).
  int mesh_rank(int pp, int dp, int tp) const { return (pp * dp_size() + dp) * tp_size_ + tp; }
  Communicator& data_parallel() { return dp_ ? *dp_ : *comm_; }
  Communicator& tensor_parallel_group() { return *tp_; }
  // This rank's pipeline: rank s of it is stage s (pipeline parallelism only).
  Communicator& pipeline_group() { return *pp_; }
  Monitor* monitor() { return monitor_.get(); }
  KeyValueStore* store() { return store_.get(); }
  // After a collective timed out or a peer failed: skip the orderly shutdown (which would wait
  // for the stuck collective) when this World is destroyed.
  void mark_broken() { broken_ = true; }

  // Sets up the world for `env` on `device` (the rank's device: cuda:<local_rank> or cpu).
  // Throws ConfigError for a backend that does not fit the device, DistributedError when the
  // rendezvous or the backend fails.
  static std::unique_ptr<World> create(const launch::LaunchEnv& env, const config::DistributedConfig& config,
                                       const torch::Device& device);

 private:
  World() = default;
  // Where this rank sits among its data-parallel group's members on its node.
  struct NodePlace {
    int index = 0;  // members on this node before it
    int count = 0;  // members on this node
  };
  NodePlace node_place() const;

  launch::LaunchEnv env_;
  torch::Device device_{torch::kCPU};
  config::DistributedConfig config_;
  std::unique_ptr<StoreHandle> store_holder_;
  std::unique_ptr<KeyValueStore> store_;
  std::unique_ptr<Monitor> monitor_;
  std::shared_ptr<Communicator> comm_, intra_, inter_, tp_, dp_, pp_;
  int tp_size_ = 1;
  int pp_size_ = 1;
  bool uses_mpi_ = false;
  bool broken_ = false;
};

}  // namespace hftrain::parallel
