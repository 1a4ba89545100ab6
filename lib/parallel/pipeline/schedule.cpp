#include "parallel/pipeline/schedule.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace hftrain::parallel {

namespace {

// The k-th forward (or backward) of an interleaved stage: groups of `stages` micro-batches go
// through chunk 0, then chunk 1, ... (the backwards from the last chunk), then the next group.
PipelineOp interleaved_op(bool forward, int k, int stages, int chunks) {
  const int in_group = k % (stages * chunks);
  const int chunk = in_group / stages;
  return {forward, (k / (stages * chunks)) * stages + k % stages, forward ? chunk : chunks - 1 - chunk};
}

}  // namespace

std::vector<PipelineOp> stage_schedule(PipelineSchedule schedule, int stage, int stages, int micro_batches,
                                       int chunks) {
  if (chunks < 1 || (chunks > 1 && micro_batches % stages != 0)) {
    throw std::invalid_argument("stage_schedule: interleaved stages need micro-batches in groups of the stages");
  }
  std::vector<PipelineOp> ops;
  if (schedule == PipelineSchedule::kGpipe && chunks == 1) {
    for (int m = 0; m < micro_batches; ++m) ops.push_back({true, m});
    for (int m = 0; m < micro_batches; ++m) ops.push_back({false, m});
    return ops;
  }
  // 1f1b: the later a stage, the fewer forwards it runs ahead; then one backward per forward,
  // and the backwards left at the end. Interleaved gpipe is all warm-up, and so is interleaved
  // 1f1b with as many micro-batches as stages (as Megatron's: otherwise two stages can each wait
  // on the other's send).
  const int total = micro_batches * chunks;
  const bool all_forwards_first = schedule == PipelineSchedule::kGpipe || (chunks > 1 && micro_batches == stages);
  const int warmup = all_forwards_first ? total
                     : chunks == 1      ? std::min(stages - stage - 1, micro_batches)
                                        : std::min(total, 2 * (stages - stage - 1) + (chunks - 1) * stages);
  const auto forward = [&](int k) {
    return chunks == 1 ? PipelineOp{true, k, 0} : interleaved_op(true, k, stages, chunks);
  };
  const auto backward = [&](int k) {
    return chunks == 1 ? PipelineOp{false, k, 0} : interleaved_op(false, k, stages, chunks);
  };
  int next_forward = 0, next_backward = 0;
  for (; next_forward < warmup; ++next_forward) ops.push_back(forward(next_forward));
  while (next_forward < total) {
    ops.push_back(forward(next_forward++));
    ops.push_back(backward(next_backward++));
  }
  while (next_backward < total) ops.push_back(backward(next_backward++));
  return ops;
}

std::vector<std::vector<PipelineTransfer>> stage_exchanges(const std::vector<PipelineOp>& schedule, int stage,
                                                           int stages, int chunks, bool tied) {
  const int virtual_stages = stages * chunks;
  std::vector<std::vector<PipelineTransfer>> out(schedule.size() + 1);
  // Interleaved, in the steady state a forward and the backward after it form one step
  // (Megatron's): the exchange before the step receives what both need, the one after it sends
  // what both made. Exchanging after each op instead lets two stages each wait on a send the other
  // posts only in its next exchange. A schedule that runs every forward first has no steady state.
  size_t leading = 0, forwards = 0;
  while (leading < schedule.size() && schedule[leading].forward) ++leading;
  for (const PipelineOp& op : schedule) forwards += op.forward ? 1 : 0;
  const bool steady = chunks > 1 && leading < forwards;
  std::vector<size_t> step_begin(schedule.size()), step_end(schedule.size());
  for (size_t k = 0; k < schedule.size(); ++k) {
    const bool pair = steady && schedule[k].forward && k + 1 < schedule.size() && !schedule[k + 1].forward;
    step_begin[k] = k;
    step_end[k] = pair ? k + 2 : k + 1;
    if (pair) {
      step_begin[k + 1] = k;
      step_end[k + 1] = k + 2;
      ++k;
    }
  }
  for (size_t k = 0; k < schedule.size(); ++k) {
    const PipelineOp& op = schedule[k];
    const int v = op.chunk * stages + stage;
    const bool first = v == 0, last = v + 1 == virtual_stages;
    const int before = (v + stages - 1) % stages, after = (v + 1) % stages;  // the neighbours' stages
    auto& needs = out[step_begin[k]];
    auto& hands = out[step_end[k]];
    // What op k needs before its step runs: the previous stage's activations, or the next one's
    // gradients.
    if (op.forward && !first) needs.push_back({false, before, Payload::kActivation, op.micro, op.chunk});
    if (!op.forward && !last) needs.push_back({false, after, Payload::kGradient, op.micro, op.chunk});
    // What it hands on, with the next step's receives.
    if (op.forward && !last) hands.push_back({true, after, Payload::kActivation, op.micro, op.chunk});
    if (!op.forward && !first) hands.push_back({true, before, Payload::kGradient, op.micro, op.chunk});
  }
  if (tied && stages > 1 && !schedule.empty()) {
    if (stage + 1 == stages) out.back().push_back({true, 0, Payload::kTiedGradient, 0, chunks - 1});
    if (stage == 0) out[schedule.size() - 1].push_back({false, stages - 1, Payload::kTiedGradient, 0, 0});
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
  for (int i = 0; i < n; ++i)
    prefix[static_cast<size_t>(i) + 1] = prefix[static_cast<size_t>(i)] + block_params[static_cast<size_t>(i)];
  const auto cost = [&](int s, int begin, int end) {
    int64_t c = prefix[static_cast<size_t>(end)] - prefix[static_cast<size_t>(begin)];
    if (s == 0) c += first_extra;
    if (s == stages - 1) c += last_extra;
    return c;
  };
  constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
  // best[s][e]: the least largest stage over stages 0..s holding blocks [0, e); from[s][e] where
  // stage s begins.
  std::vector<std::vector<int64_t>> best(static_cast<size_t>(stages),
                                         std::vector<int64_t>(static_cast<size_t>(n) + 1, kNone));
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
