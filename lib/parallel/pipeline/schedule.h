// Pipeline parallelism's plan, without tensors: which stage holds which blocks, the order in which
// a stage runs its micro-batches' forwards and backwards (gpipe, 1f1b), and the transfers between
// neighbouring stages around each of them. The training loop (train/pipeline_runner) follows it;
// `hftrain plan` counts the activations it holds.
#pragma once

#include <cstdint>
#include <vector>

namespace hftrain::parallel {

enum class PipelineSchedule {
  kGpipe,  // every micro-batch's forward, then every backward: all activations held at once
  k1f1b,   // after stages - stage - 1 warm-up forwards, one forward and one backward in turn
};

struct PipelineOp {
  bool forward = true;
  int micro = 0;
  bool operator==(const PipelineOp&) const = default;
};

// What stage `stage` of `stages` runs, in order, for `micro_batches` micro-batches: each
// micro-batch's forward once and its backward once, the forward first.
std::vector<PipelineOp> stage_schedule(PipelineSchedule schedule, int stage, int stages, int micro_batches);

// A transfer between neighbouring stages: a micro-batch's activations (forward, to the next stage)
// or their gradients (backward, to the previous one).
struct PipelineTransfer {
  bool send = true;
  int peer = 0;  // the neighbouring stage
  bool activation = true;
  int micro = 0;
  bool operator==(const PipelineTransfer&) const = default;
};

// The exchanges around the ops of `schedule` (one stage's): exchange k runs before op k and holds
// the sends of op k - 1 and the receives op k needs; exchange ops.size() holds the last op's
// sends. Sends and receives of one exchange start together (Communicator::exchange), which keeps
// two neighbours that each send first from blocking each other.
std::vector<std::vector<PipelineTransfer>> stage_exchanges(const std::vector<PipelineOp>& schedule, int stage,
                                                           int stages);

// The most micro-batches whose activations `schedule` holds at once (forwarded, not yet backward).
int activations_in_flight(const std::vector<PipelineOp>& schedule);

// Block boundaries (stages + 1 indices from 0 to the number of blocks) that balance the stages'
// parameters: `block_params` per block, `first_extra` on the first stage (embeddings),
// `last_extra` on the last (final norm, head). Every stage holds at least one block; needs
// stages <= blocks.
std::vector<int64_t> balanced_boundaries(const std::vector<int64_t>& block_params, int64_t first_extra,
                                         int64_t last_extra, int stages);

}  // namespace hftrain::parallel
