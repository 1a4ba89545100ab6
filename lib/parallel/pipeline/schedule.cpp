#include "parallel/pipeline/schedule.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace hftrain::parallel {

std::vector<PipelineOp> stage_schedule(PipelineSchedule schedule, int stage, int stages, int micro_batches) {
  std::vector<PipelineOp> ops;
  if (schedule == PipelineSchedule::kGpipe) {
    for (int m = 0; m < micro_batches; ++m) ops.push_back({true, m});
    for (int m = 0; m < micro_batches; ++m) ops.push_back({false, m});
    return ops;
  }
  // 1f1b: the later a stage, the fewer forwards it runs ahead; then one backward per forward,
  // and the backwards left at the end.
  const int warmup = std::min(stages - stage - 1, micro_batches);
  int next_forward = 0, next_backward = 0;
  for (; next_forward < warmup; ++next_forward) ops.push_back({true, next_forward});
  while (next_forward < micro_batches) {
    ops.push_back({true, next_forward++});
    ops.push_back({false, next_backward++});
  }
  while (next_backward < micro_batches) ops.push_back({false, next_backward++});
  return ops;
}

std::vector<std::vector<PipelineTransfer>> stage_exchanges(const std::vector<PipelineOp>& schedule, int stage,
                                                           int stages) {
  const bool first = stage == 0, last = stage + 1 == stages;
  std::vector<std::vector<PipelineTransfer>> out(schedule.size() + 1);
  for (size_t k = 0; k < schedule.size(); ++k) {
    const PipelineOp& op = schedule[k];
    // What op k needs before it runs: the previous stage's activations, or the next one's gradients.
    if (op.forward && !first) out[k].push_back({false, stage - 1, true, op.micro});
    if (!op.forward && !last) out[k].push_back({false, stage + 1, false, op.micro});
    // What it hands on, with the next op's receives.
    if (op.forward && !last) out[k + 1].push_back({true, stage + 1, true, op.micro});
    if (!op.forward && !first) out[k + 1].push_back({true, stage - 1, false, op.micro});
  }
  return out;
}

int activations_in_flight(const std::vector<PipelineOp>& schedule) {
  int held = 0, most = 0;
  for (const PipelineOp& op : schedule) {
    held += op.forward ? 1 : -1;
    most = std::max(most, held);
  }
  return most;
}

std::vector<int64_t> balanced_boundaries(const std::vector<int64_t>& block_params, int64_t first_extra,
                                         int64_t last_extra, int stages) {
  const int n = static_cast<int>(block_params.size());
  if (stages < 1 || stages > n) throw std::invalid_argument("balanced_boundaries: needs 1 <= stages <= blocks");
  std::vector<int64_t> prefix(static_cast<size_t>(n) + 1, 0);
  for (int i = 0; i < n; ++i) prefix[static_cast<size_t>(i) + 1] = prefix[static_cast<size_t>(i)] + block_params[static_cast<size_t>(i)];
  const auto cost = [&](int s, int begin, int end) {
    int64_t c = prefix[static_cast<size_t>(end)] - prefix[static_cast<size_t>(begin)];
    if (s == 0) c += first_extra;
    if (s == stages - 1) c += last_extra;
    return c;
  };
  constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
  // best[s][e]: the least largest stage over stages 0..s holding blocks [0, e); from[s][e] where
  // stage s begins.
  std::vector<std::vector<int64_t>> best(static_cast<size_t>(stages), std::vector<int64_t>(static_cast<size_t>(n) + 1, kNone));
  std::vector<std::vector<int>> from(static_cast<size_t>(stages), std::vector<int>(static_cast<size_t>(n) + 1, 0));
  for (int e = 1; e <= n; ++e) best[0][static_cast<size_t>(e)] = cost(0, 0, e);
  for (int s = 1; s < stages; ++s) {
    for (int e = s + 1; e <= n; ++e) {
      for (int b = s; b < e; ++b) {
        const int64_t before = best[static_cast<size_t>(s) - 1][static_cast<size_t>(b)];
        if (before == kNone) continue;
        const int64_t c = std::max(before, cost(s, b, e));
        if (c < best[static_cast<size_t>(s)][static_cast<size_t>(e)]) {
          best[static_cast<size_t>(s)][static_cast<size_t>(e)] = c;
          from[static_cast<size_t>(s)][static_cast<size_t>(e)] = b;
        }
      }
    }
  }
  std::vector<int64_t> bounds(static_cast<size_t>(stages) + 1, 0);
  bounds[static_cast<size_t>(stages)] = n;
  int e = n;
  for (int s = stages - 1; s > 0; --s) {
    e = from[static_cast<size_t>(s)][static_cast<size_t>(e)];
    bounds[static_cast<size_t>(s)] = e;
  }
  return bounds;
}

}  // namespace hftrain::parallel
