#include <catch2/catch.hpp>

#include "launch/launch_env.h"
#include "util/env.h"
#include "util/error.h"

using namespace hftrain;
using Catch::Matchers::Contains;

TEST_CASE("launch env: a process started by hand is a world of one", "[launch]") {
  const util::MapEnvironment env;
  const auto e = launch::detect_launch_env(env);
  CHECK(e.launcher == launch::Launcher::kNone);
  CHECK(e.world_size == 1);
  CHECK_FALSE(e.distributed());
}

TEST_CASE("launch env: hftrain's own launcher and torchrun", "[launch]") {
  util::MapEnvironment env{{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "2"},
                           {"GROUP_RANK", "1"}, {"MASTER_ADDR", "node0"}, {"MASTER_PORT", "29500"}};
  auto e = launch::detect_launch_env(env);
  CHECK(e.launcher == launch::Launcher::kTorchrun);
  CHECK(e.rank == 3);
  CHECK(e.local_rank == 1);
  CHECK(e.node_rank == 1);
  CHECK(e.num_nodes == 2);
  CHECK(e.master_addr == "node0");
  CHECK(e.master_port == 29500);
  CHECK_FALSE(e.launcher_hosts_store);  // torchrun without an agent store: rank 0 hosts it
  env.set("TORCHELASTIC_USE_AGENT_STORE", "True");
  CHECK(launch::detect_launch_env(env).launcher_hosts_store);
  env.set(launch::kLauncherVar, "1");
  e = launch::detect_launch_env(env);
  CHECK(e.launcher == launch::Launcher::kHftrain);
  CHECK(e.launcher_hosts_store);
  CHECK_THAT(e.describe(), Contains("rank 3 of 4 (local 1 of 2, node 1 of 2)"));
}

TEST_CASE("launch env: Open MPI's mpirun", "[launch]") {
  const util::MapEnvironment env{{"OMPI_COMM_WORLD_RANK", "5"}, {"OMPI_COMM_WORLD_SIZE", "8"},
                                 {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}};
  const auto e = launch::detect_launch_env(env);
  CHECK(e.launcher == launch::Launcher::kOpenMpi);
  CHECK(e.rank == 5);
  CHECK(e.world_size == 8);
  CHECK(e.local_rank == 1);
  CHECK(e.local_world_size == 4);
  CHECK(e.node_rank == 1);
  CHECK(e.num_nodes == 2);
  CHECK(e.master_addr.empty());  // rank 0 hosts the store and says where through MPI
}

TEST_CASE("launch env: Slurm's srun, with uneven tasks per node", "[launch]") {
  const util::MapEnvironment env{{"SLURM_PROCID", "4"},  {"SLURM_NTASKS", "5"}, {"SLURM_LOCALID", "0"},
                                 {"SLURM_NODEID", "2"},  {"SLURM_NNODES", "3"},
                                 {"SLURM_TASKS_PER_NODE", "2(x2),1"}};
  const auto e = launch::detect_launch_env(env);
  CHECK(e.launcher == launch::Launcher::kSlurm);
  CHECK(e.rank == 4);
  CHECK(e.node_rank == 2);
  CHECK(e.local_world_size == 1);
  CHECK(e.num_nodes == 3);
}

TEST_CASE("launch env: malformed or inconsistent variables name the variable", "[launch]") {
  CHECK_THROWS_WITH(launch::detect_launch_env(util::MapEnvironment{{"RANK", "x"}, {"WORLD_SIZE", "2"}}),
                    Contains("RANK=x is not a non-negative integer"));
  CHECK_THROWS_WITH(launch::detect_launch_env(util::MapEnvironment{{"RANK", "2"}, {"WORLD_SIZE", "2"},
                                                                   {"MASTER_ADDR", "a"}, {"MASTER_PORT", "1"}}),
                    Contains("RANK=2 is outside the world of WORLD_SIZE=2"));
  CHECK_THROWS_WITH(launch::detect_launch_env(util::MapEnvironment{{"RANK", "0"}, {"WORLD_SIZE", "2"}}),
                    Contains("MASTER_ADDR or MASTER_PORT is not set"));
  CHECK_THROWS_AS(launch::detect_launch_env(util::MapEnvironment{{"OMPI_COMM_WORLD_SIZE", "2"}}), util::ConfigError);
}

TEST_CASE("launch env: zero world or local sizes are refused, never divided by", "[launch]") {
  const auto refused = [](util::MapEnvironment env) {
    CHECK_THROWS_AS(launch::detect_launch_env(env), util::ConfigError);
  };
  refused({{"RANK", "0"}, {"WORLD_SIZE", "0"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "29500"}});
  refused({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"LOCAL_WORLD_SIZE", "0"}, {"MASTER_ADDR", "127.0.0.1"},
           {"MASTER_PORT", "29500"}});
  refused({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "1"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "0"}});
  refused({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "0"}});
}
