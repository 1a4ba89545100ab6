#include "launch/launch_env.h"

#include <charconv>
#include <limits>
#include <optional>
#include <vector>

#include "util/error.h"
#include "util/strings.h"

namespace hftrain::launch {
namespace {

// An integer variable; nullopt when unset. Throws ConfigError naming it when malformed.
std::optional<int> int_var(const util::Environment& env, const std::string& name) {
  const auto text = env.get(name);
  if (!text) return std::nullopt;
  const std::optional<int64_t> value = util::parse_int64(*text);
  if (!value || *value < 0 || *value > std::numeric_limits<int>::max()) {
    throw util::ConfigError("environment variable " + name + "=" + text->substr(0, 40) +
                                " is not a non-negative integer",
                            "unset it, or check the launcher that set it");
  }
  return static_cast<int>(*value);
}

int required_int(const util::Environment& env, const std::string& name, const char* launcher) {
  const auto v = int_var(env, name);
  if (!v) {
    throw util::ConfigError(std::string("started by ") + launcher + " but " + name + " is not set",
                            "start hftrain through the launcher as documented, or unset its other variables");
  }
  return *v;
}

// Slurm's tasks-per-node list, e.g. "2(x3),1": the count for node `node`.
std::optional<int> slurm_tasks_on_node(const std::string& list, int node) {
  int index = 0;
  size_t pos = 0;
  while (pos < list.size()) {
    size_t comma = list.find(',', pos);
    if (comma == std::string::npos) comma = list.size();
    const std::string item = list.substr(pos, comma - pos);
    int count = 0, repeat = 1;
    const size_t paren = item.find("(x");
    const std::string head = item.substr(0, paren);
    if (std::from_chars(head.data(), head.data() + head.size(), count).ec != std::errc()) return std::nullopt;
    if (paren != std::string::npos) {
      const std::string rep = item.substr(paren + 2, item.size() - paren - 3);
      if (std::from_chars(rep.data(), rep.data() + rep.size(), repeat).ec != std::errc()) return std::nullopt;
    }
    if (node < index + repeat) return count;
    index += repeat;
    pos = comma + 1;
  }
  return std::nullopt;
}

void check(const LaunchEnv& e, const std::string& rank_var, const std::string& size_var) {
  if (e.world_size < 1) throw util::ConfigError(size_var + " must be at least 1", "check the launcher");
  if (e.rank >= e.world_size) {
    throw util::ConfigError(rank_var + "=" + std::to_string(e.rank) + " is outside the world of " + size_var + "=" +
                                std::to_string(e.world_size),
                            "check the launcher's variables");
  }
  if (e.local_world_size < 1 || e.local_rank >= e.local_world_size || e.local_world_size > e.world_size) {
    throw util::ConfigError("local rank " + std::to_string(e.local_rank) + " of " + std::to_string(e.local_world_size) +
                                " local processes (the launcher's local rank and local size, e.g. LOCAL_RANK and "
                                "LOCAL_WORLD_SIZE) does not fit a world of " + std::to_string(e.world_size),
                            "check the launcher's variables");
  }
}

void read_master(const util::Environment& env, LaunchEnv& e) {
  if (auto a = env.get("MASTER_ADDR")) e.master_addr = *a;
  if (auto p = int_var(env, "MASTER_PORT")) {
    if (*p > 65535) throw util::ConfigError("MASTER_PORT=" + std::to_string(*p) + " is not a port", "use 1..65535");
    e.master_port = *p;
  }
}

}  // namespace

const char* launcher_name(Launcher launcher) {
  switch (launcher) {
    case Launcher::kNone: return "hand";
    case Launcher::kHftrain: return "hftrain's launcher";
    case Launcher::kTorchrun: return "torchrun";
    case Launcher::kOpenMpi: return "mpirun";
    case Launcher::kSlurm: return "srun";
  }
  return "?";
}

std::string LaunchEnv::describe() const {
  return "rank " + std::to_string(rank) + " of " + std::to_string(world_size) + " (local " +
         std::to_string(local_rank) + " of " + std::to_string(local_world_size) + ", node " +
         std::to_string(node_rank) + " of " + std::to_string(num_nodes) + "), started by " + launcher_name(launcher);
}

LaunchEnv detect_launch_env(const util::Environment& env) {
  LaunchEnv e;
  const bool torch_style = env.get("RANK") && env.get("WORLD_SIZE");
  if (torch_style) {
    e.launcher = env.get(kLauncherVar) ? Launcher::kHftrain : Launcher::kTorchrun;
    const char* who = launcher_name(e.launcher);
    e.rank = required_int(env, "RANK", who);
    e.world_size = required_int(env, "WORLD_SIZE", who);
    e.local_rank = int_var(env, "LOCAL_RANK").value_or(e.rank);
    e.local_world_size = int_var(env, "LOCAL_WORLD_SIZE").value_or(e.world_size);
    e.node_rank = int_var(env, "GROUP_RANK").value_or(e.rank / std::max(1, e.local_world_size));
    // max(1, ...): a zero from the environment reaches check() below, not a division.
    e.num_nodes = int_var(env, "HFTRAIN_NNODES")
                      .value_or((e.world_size + e.local_world_size - 1) / std::max(1, e.local_world_size));
    read_master(env, e);
    e.launcher_hosts_store = e.launcher == Launcher::kHftrain || env.get("TORCHELASTIC_USE_AGENT_STORE") == "True";
    check(e, "RANK", "WORLD_SIZE");
    if (e.master_addr.empty() || e.master_port == 0) {
      throw util::ConfigError(std::string("started by ") + who + " but MASTER_ADDR or MASTER_PORT is not set",
                              "set both to the address and port of the rendezvous (node 0)");
    }
    return e;
  }
  if (env.get("OMPI_COMM_WORLD_SIZE")) {
    e.launcher = Launcher::kOpenMpi;
    e.rank = required_int(env, "OMPI_COMM_WORLD_RANK", "mpirun");
    e.world_size = required_int(env, "OMPI_COMM_WORLD_SIZE", "mpirun");
    e.local_rank = int_var(env, "OMPI_COMM_WORLD_LOCAL_RANK").value_or(0);
    e.local_world_size = int_var(env, "OMPI_COMM_WORLD_LOCAL_SIZE").value_or(1);
    // Open MPI does not name the node; with the default by-slot mapping it is rank / local size.
    e.node_rank = e.rank / std::max(1, e.local_world_size);
    e.num_nodes = (e.world_size + e.local_world_size - 1) / std::max(1, e.local_world_size);
    read_master(env, e);
    check(e, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE");
    return e;
  }
  if (env.get("SLURM_PROCID") && env.get("SLURM_NTASKS")) {
    e.launcher = Launcher::kSlurm;
    e.rank = required_int(env, "SLURM_PROCID", "srun");
    e.world_size = required_int(env, "SLURM_NTASKS", "srun");
    e.local_rank = int_var(env, "SLURM_LOCALID").value_or(0);
    e.node_rank = int_var(env, "SLURM_NODEID").value_or(0);
    e.num_nodes = int_var(env, "SLURM_NNODES").value_or(1);
    std::optional<int> local;
    for (const char* var : {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"}) {
      if (auto list = env.get(var); list && !local) local = slurm_tasks_on_node(*list, e.node_rank);
    }
    e.local_world_size = local.value_or(e.world_size / std::max(1, e.num_nodes));
    read_master(env, e);
    check(e, "SLURM_PROCID", "SLURM_NTASKS");
    return e;
  }
  return e;
}

}  // namespace hftrain::launch
