#include "parallel/data_parallel/memory_report.h"

namespace hftrain::parallel {

std::string memory_report(const ShardingStrategy& strategy, const World& world,
                          const std::vector<std::pair<std::string, torch::Tensor>>& parameters, UnitSizes units) {
  const MemoryReport m = strategy.memory();
  int64_t psi = 0;
  for (const auto& [name, p] : parameters) psi += p.numel();
  const StrategyOptions& o = strategy.options();
  const config::Strategy s = strategy.name() == "single" ? config::Strategy::kDdp : o.distributed.strategy;
  // hybrid shards inside a node: its N is the node's ranks; the others shard over the data-parallel
  // group (the world without tensor parallelism).
  const int n = s == config::Strategy::kHybrid ? world.env().local_world_size / world.tp_size() : world.dp_size();
  const MemoryEstimate e = estimate_memory(s, psi, n, o.optimizer, o.distributed.bucket_size, units, o.bf16_params,
                                           o.ema_weights);
  auto part = [](const char* what, int64_t have, double formula) {
    return std::string(what) + " " + std::to_string(have) + " B (" + format_bytes(static_cast<double>(have)) +
           "; formula " + std::to_string(static_cast<int64_t>(formula)) + " B)";
  };
  return "memory on rank " + std::to_string(world.rank()) + " (" + strategy.name() + ", " +
         std::to_string(world.size()) + " ranks, Ψ = " + std::to_string(psi) + ", per rank " + e.formula +
         "): " + part("parameters", m.parameters, e.parameters) + ", " + part("gradients", m.gradients, e.gradients) +
         ", " + part("optimizer state", m.optimizer_state, e.optimizer_state) + ", buffers " +
         std::to_string(m.buffers) + " B (" + format_bytes(static_cast<double>(m.buffers)) + ")" +
         (m.host > 0 ? "; of these in CPU memory (distributed.cpu_offload) " + std::to_string(m.host) + " B" : "");
}

}  // namespace hftrain::parallel
