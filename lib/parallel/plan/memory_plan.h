// What each rank holds under each sharding strategy, by the ZeRO paper's accounting (Rajbhandari
// et al., 2020: with Psi parameters and N ranks, mixed-precision Adam holds 2Psi + 2Psi + 12Psi
// for DDP, 4Psi + 12Psi/N for ZeRO-1, 2Psi + 14Psi/N for ZeRO-2, 16Psi/N for ZeRO-3). hftrain keeps
// fp32 parameters as the master weights and computes in bf16/fp16 through autocast, so it holds
// the fp32 variant, derived the same way: parameters 4Psi, gradients 4Psi, optimizer state K*Psi
// with K = 8 for Adam (exp_avg, exp_avg_sq; the parameters are the master copy), 4 for SGD with
// momentum and for Lion, 0 for plain SGD:
//   ddp    4Psi + 4Psi + K Psi
//   zero1  4Psi + 4Psi + K Psi/N
//   zero2  4Psi + (4 + K) Psi/N
//   zero3  (8 + K) Psi/N
// plus bucket and gather buffers, reported separately. With trainer.param_dtype=bf16 the weights and
// gradients take 2 bytes and the fp32 masters count with the optimizer state (the paper's own
// mixed-precision rows): ddp 2Psi + 2Psi + (4 + K)Psi, zero1 2Psi + 2Psi + (4 + K)Psi/N, zero2
// 2Psi + (2 + 4 + K)Psi/N, zero3 (2 + 2 + 4 + K)Psi/N.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/config.h"

namespace hftrain::parallel {

struct MemoryEstimate {
  config::Strategy strategy = config::Strategy::kDdp;
  double parameters = 0;  // bytes per rank
  double gradients = 0;
  double optimizer_state = 0;
  double buffers = 0;     // bucket (and gather) buffers
  std::string formula;    // e.g. "4Ψ + (4 + 8)Ψ/N"
  double total() const { return parameters + gradients + optimizer_state; }
};

// "ddp", "zero1", ..., "hybrid"
std::string strategy_name(config::Strategy strategy);

// Elements of zero3's largest units (model/parameter_units.h): its gather buffers hold the root and
// two blocks whole; its reductions three block-sized buffers used in turn (and the root's own while it is
// reduced, when it is larger). Zero: unknown (two buckets are assumed).
struct UnitSizes {
  int64_t root = 0;
  int64_t block = 0;
};

// K: optimizer-state bytes per parameter (see above); `ema_weights` (trainer.ema.enabled) adds the
// fp32 average's 4.
int64_t optimizer_state_bytes_per_parameter(const config::OptimizerConfig& optimizer, bool ema_weights = false);

// The estimate for one strategy (`bucket_bytes`: distributed.bucket_size).
// For hybrid, `world_size` is the ranks of one node.
// `bf16_params`: trainer.param_dtype=bf16.
MemoryEstimate estimate_memory(config::Strategy strategy, int64_t parameters, int world_size,
                               const config::OptimizerConfig& optimizer, int64_t bucket_bytes, UnitSizes units = {},
                               bool bf16_params = false, bool ema_weights = false);
// zero3's gather and reduction buffers for units of these sizes (elements; fp32).
double zero3_buffer_bytes(UnitSizes units, int shard_ranks, int64_t reduce_element_bytes);

// The table `hftrain plan` prints: one row per strategy (ddp, zero1, zero2, zero3, and hybrid with
// `ranks_per_node` in each node when that is fewer than world_size).
std::string memory_table(int64_t parameters, int world_size, const config::OptimizerConfig& optimizer,
                         int64_t bucket_bytes, UnitSizes units = {}, int ranks_per_node = 0, bool bf16_params = false,
                         bool ema_weights = false);

// One layout's figures for `hftrain plan --memory`: at tensor parallelism `tp` and pipeline
// parallelism `pp`, what a rank holds of the model (Ψ elements of its largest stage; zero3's unit
// sizes) and the activations it keeps at once.
struct LayoutCandidate {
  int tp = 1;
  int pp = 1;
  int64_t parameters = 0;
  UnitSizes units;
  double activations = 0;
};
// The lines naming every layout (tp x pp x strategy over the remaining world_size / (tp x pp)
// data-parallel ranks) whose parameters, gradients, optimizer state, buffers and activations fit `device_bytes`
// per rank, smallest tensor parallelism first; a line saying none does otherwise.
std::string fitting_layouts(const std::vector<LayoutCandidate>& candidates, int world_size,
                            const config::OptimizerConfig& optimizer, int64_t bucket_bytes, double device_bytes,
                            bool bf16_params = false, bool ema_weights = false);

// "1.23 GiB"
std::string format_bytes(double bytes);

}  // namespace hftrain::parallel
