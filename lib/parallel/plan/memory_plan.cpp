#include "parallel/plan/memory_plan.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace hftrain::parallel {

std::string strategy_name(config::Strategy s) {
  switch (s) {
    case config::Strategy::kDdp: return "ddp";
    case config::Strategy::kZero1: return "zero1";
    case config::Strategy::kZero2: return "zero2";
    case config::Strategy::kZero3: return "zero3";
    case config::Strategy::kHybrid: return "hybrid";
  }
  return "?";
}

double zero3_buffer_bytes(UnitSizes units, int shard_ranks, int64_t reduce_element_bytes) {
  // Reductions: three block-sized buffers (flat gradient and chunk) reused in turn, plus the
  // root's own pair while it is reduced when it is the larger unit.
  const double block = static_cast<double>(units.block) * static_cast<double>(reduce_element_bytes);
  const double root =
      units.root > units.block ? static_cast<double>(units.root) * static_cast<double>(reduce_element_bytes) : 0.0;
  const double ranks = static_cast<double>(std::max(1, shard_ranks));
  return 4.0 * static_cast<double>(units.root + 2 * units.block) + (3 * block + root) * (1 + 1 / ranks);
}

namespace {
int64_t optimizer_own_state_bytes(const config::OptimizerConfig& o) {
  switch (o.name) {
    case config::OptimizerName::kAdamW: return o.amsgrad ? 12 : 8;
    case config::OptimizerName::kAdamW8bit: return 2;  // plus a 4-byte absmax per 256-element block
    case config::OptimizerName::kScheduleFreeAdamW: return 8;  // z and the second moment
    case config::OptimizerName::kAdagrad: return 4;
    case config::OptimizerName::kRmsprop: return 4 + (o.momentum > 0 ? 4 : 0) + (o.rmsprop.centered ? 4 : 0);
    case config::OptimizerName::kGaloreAdamW:
    case config::OptimizerName::kApolloAdamW: return 8;  // at most: the moments are rank x n per matrix
    case config::OptimizerName::kLion: return 4;
    case config::OptimizerName::kMuon: return 8;  // at most: a matrix keeps a momentum (4), the rest AdamW's 8
    case config::OptimizerName::kSgd: return o.momentum > 0 ? 4 : 0;
    case config::OptimizerName::kAdafactor: return o.adafactor.beta1 ? 4 : 0;  // plus the row/column factors
  }
  return 8;
}
}  // namespace

int64_t optimizer_state_bytes_per_parameter(const config::OptimizerConfig& o, bool ema_weights) {
  return optimizer_own_state_bytes(o) + (ema_weights ? 4 : 0);
}

MemoryEstimate estimate_memory(config::Strategy strategy, int64_t parameters, int world_size,
                               const config::OptimizerConfig& optimizer, int64_t bucket_bytes, UnitSizes units,
                               bool bf16_params, bool ema_weights) {
  const double psi = static_cast<double>(parameters), n = std::max(1, world_size);
  const double k = static_cast<double>(optimizer_state_bytes_per_parameter(optimizer, ema_weights));
  // The weights' and gradients' bytes, and the fp32 masters' (with the optimizer state).
  const double w = bf16_params ? 2 : 4, m = bf16_params ? 4 : 0;
  const std::string ks = std::to_string(static_cast<int>(k)), ws = bf16_params ? "2" : "4";
  const std::string state = bf16_params ? "(4 + " + ks + ")Ψ" : ks + "Ψ";
  MemoryEstimate e;
  e.strategy = strategy;
  // Buckets hold the gradients; a bucket is at most bucket_size, or one parameter larger than that.
  const double bucket = std::min(static_cast<double>(bucket_bytes), w * psi);
  switch (strategy) {
    case config::Strategy::kDdp:
      e.parameters = w * psi, e.gradients = w * psi, e.optimizer_state = (k + m) * psi;
      e.buffers = w * psi;  // every bucket's flat buffer
      e.formula = ws + "Ψ + " + ws + "Ψ + " + state;
      break;
    case config::Strategy::kZero1:
      e.parameters = w * psi, e.gradients = w * psi, e.optimizer_state = (k + m) * psi / n;
      // flat buckets (reused for the all-gather), reduce-scatter chunks, this rank's chunks
      e.buffers = w * psi + 2 * w * psi / n;
      e.formula = ws + "Ψ + " + ws + "Ψ + " + state + "/N";
      break;
    case config::Strategy::kZero2:
      e.parameters = w * psi, e.gradients = w * psi / n, e.optimizer_state = (k + m) * psi / n;
      e.buffers = w * psi + 2 * w * psi / n;  // flat buckets, reduce-scatter chunks, this rank's chunks
      e.formula = ws + "Ψ + (" + ws + (bf16_params ? " + 4" : "") + " + " + ks + ")Ψ/N";
      break;
    case config::Strategy::kZero3:
    case config::Strategy::kHybrid:
      e.parameters = w * psi / n, e.gradients = w * psi / n, e.optimizer_state = (k + m) * psi / n;
      // Units whole while in use, and their reductions (or two buckets when the units are unknown).
      e.buffers = units.root + units.block > 0 ? zero3_buffer_bytes(units, world_size, static_cast<int64_t>(w))
                                               : 2 * bucket;
      e.formula = bf16_params ? "(2 + 2 + 4 + " + ks + ")Ψ/N" : "(8 + " + ks + ")Ψ/N";
      break;
  }
  return e;
}

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) bytes /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", bytes, units[u]);
  return buf;
}

std::string memory_table(int64_t parameters, int world_size, const config::OptimizerConfig& optimizer,
                         int64_t bucket_bytes, UnitSizes units, int ranks_per_node, bool bf16_params,
                         bool ema_weights) {
  std::ostringstream out;
  char line[256];
  std::snprintf(line, sizeof line, "%-8s %-22s %12s %12s %12s %12s %12s\n", "strategy",
                bf16_params ? "per rank (bf16+master)" : "per rank (fp32 master)", "parameters", "gradients",
                "optimizer", "total", "buffers");
  out << line;
  std::vector<config::Strategy> rows = {config::Strategy::kDdp, config::Strategy::kZero1, config::Strategy::kZero2,
                                        config::Strategy::kZero3};
  const bool hybrid = ranks_per_node > 0 && ranks_per_node < world_size;
  if (hybrid) rows.push_back(config::Strategy::kHybrid);
  for (auto s : rows) {
    const int n = s == config::Strategy::kHybrid ? ranks_per_node : world_size;
    const MemoryEstimate e =
        estimate_memory(s, parameters, n, optimizer, bucket_bytes, units, bf16_params, ema_weights);
    std::string name = strategy_name(s);
    // Ψ takes two bytes and one column: pad by columns, not bytes.
    std::string formula = s == config::Strategy::kHybrid ? e.formula + " (N=" + std::to_string(n) + ")" : e.formula;
    size_t columns = 0;
    for (unsigned char c : formula) columns += (c & 0xC0) != 0x80;
    formula.append(columns < 22 ? 22 - columns : 0, ' ');
    std::snprintf(line, sizeof line, "%-8s %s %12s %12s %12s %12s %12s\n", name.c_str(), formula.c_str(),
                  format_bytes(e.parameters).c_str(), format_bytes(e.gradients).c_str(),
                  format_bytes(e.optimizer_state).c_str(), format_bytes(e.total()).c_str(),
                  format_bytes(e.buffers).c_str());
    out << line;
  }
  return out.str();
}

std::string fitting_layouts(const std::vector<LayoutCandidate>& candidates, int world_size,
                            const config::OptimizerConfig& optimizer, int64_t bucket_bytes, double device_bytes,
                            bool bf16_params, bool ema_weights) {
  std::string out;
  for (const LayoutCandidate& c : candidates) {
    const int dp = world_size / (c.tp * c.pp);
    for (auto s :
         {config::Strategy::kDdp, config::Strategy::kZero1, config::Strategy::kZero2, config::Strategy::kZero3}) {
      const MemoryEstimate e =
          estimate_memory(s, c.parameters, dp, optimizer, bucket_bytes, c.units, bf16_params, ema_weights);
      const double total = e.total() + e.buffers + c.activations;
      if (total > device_bytes) continue;
      out += "  tensor_parallel=" + std::to_string(c.tp) +
             (c.pp > 1 ? " pipeline_parallel=" + std::to_string(c.pp) : std::string()) + " (data parallel " +
             std::to_string(dp) + ") strategy=" +
             strategy_name(s) + ": " + format_bytes(total) + " per rank\n";
    }
  }
  const std::string budget = format_bytes(device_bytes);
  return out.empty() ? "no layout fits " + budget + " per rank: more ranks, activation checkpointing, or a smaller "
                       "micro-batch\n"
                     : "layouts that fit " + budget + " per rank (parameters, gradients, optimizer state, buffers and "
                       "the activations held at once):\n" + out;
}

}  // namespace hftrain::parallel
