#include "dist/memory_plan.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace hftrain::dist {

int64_t optimizer_state_bytes_per_parameter(const config::OptimizerConfig& o) {
  switch (o.name) {
    case config::OptimizerName::kAdamW: return 8;
    case config::OptimizerName::kLion: return 4;
    case config::OptimizerName::kSgd: return o.momentum > 0 ? 4 : 0;
    case config::OptimizerName::kAdafactor: return o.adafactor.beta1 ? 4 : 0;  // plus the row/column factors
  }
  return 8;
}

MemoryEstimate estimate_memory(config::Strategy strategy, int64_t parameters, int world_size,
                               const config::OptimizerConfig& optimizer, int64_t bucket_bytes) {
  const double psi = static_cast<double>(parameters), n = std::max(1, world_size);
  const double k = static_cast<double>(optimizer_state_bytes_per_parameter(optimizer));
  const std::string ks = std::to_string(static_cast<int>(k));
  MemoryEstimate e;
  e.strategy = strategy;
  // Buckets hold fp32 gradients; a bucket is at most bucket_size, or one parameter larger than that.
  const double bucket = std::min(static_cast<double>(bucket_bytes), 4 * psi);
  switch (strategy) {
    case config::Strategy::kDdp:
      e.parameters = 4 * psi, e.gradients = 4 * psi, e.optimizer_state = k * psi;
      e.buffers = 4 * psi;  // every bucket's flat buffer
      e.formula = "4Ψ + 4Ψ + " + ks + "Ψ";
      break;
    case config::Strategy::kZero1:
      e.parameters = 4 * psi, e.gradients = 4 * psi, e.optimizer_state = k * psi / n;
      e.buffers = 4 * psi + 4 * psi / n;  // flat buckets (reused for the all-gather), this rank's chunks
      e.formula = "4Ψ + 4Ψ + " + ks + "Ψ/N";
      break;
    case config::Strategy::kZero2:
      e.parameters = 4 * psi, e.gradients = 4 * psi / n, e.optimizer_state = k * psi / n;
      e.buffers = 4 * psi + 8 * psi / n;  // flat buckets, reduce-scatter chunks, this rank's chunks
      e.formula = "4Ψ + (4 + " + ks + ")Ψ/N";
      break;
    case config::Strategy::kZero3:
    case config::Strategy::kHybrid:
      e.parameters = 4 * psi / n, e.gradients = 4 * psi / n, e.optimizer_state = k * psi / n;
      e.buffers = 2 * bucket;
      e.formula = "(8 + " + ks + ")Ψ/N";
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
                         int64_t bucket_bytes) {
  std::ostringstream out;
  char line[256];
  std::snprintf(line, sizeof line, "%-8s %-22s %12s %12s %12s %12s %12s\n", "strategy", "per rank (fp32 master)",
                "parameters", "gradients", "optimizer", "total", "buffers");
  out << line;
  for (auto s : {config::Strategy::kDdp, config::Strategy::kZero1, config::Strategy::kZero2, config::Strategy::kZero3}) {
    const MemoryEstimate e = estimate_memory(s, parameters, world_size, optimizer, bucket_bytes);
    const char* name = s == config::Strategy::kDdp     ? "ddp"
                       : s == config::Strategy::kZero1 ? "zero1"
                       : s == config::Strategy::kZero2 ? "zero2"
                                                       : "zero3";
    // Ψ takes two bytes and one column: pad by columns, not bytes.
    std::string formula = e.formula;
    size_t columns = 0;
    for (unsigned char c : formula) columns += (c & 0xC0) != 0x80;
    formula.append(columns < 22 ? 22 - columns : 0, ' ');
    std::snprintf(line, sizeof line, "%-8s %s %12s %12s %12s %12s %12s\n", name, formula.c_str(),
                  format_bytes(e.parameters).c_str(), format_bytes(e.gradients).c_str(),
                  format_bytes(e.optimizer_state).c_str(), format_bytes(e.total()).c_str(),
                  format_bytes(e.buffers).c_str());
    out << line;
  }
  return out.str();
}

}  // namespace hftrain::dist
