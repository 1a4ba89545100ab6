// Pipeline parallelism's plan, without tensors: which stage holds which blocks, the order in which
// a stage runs its micro-batches' forwards and backwards (gpipe, 1f1b, either interleaved over
// virtual stages), and the transfers between stages around each of them. The training loop
// (train/pipeline_runner) follows it; `hftrain plan` counts the activations it holds.
//
// Virtual stages (Megatron's interleaved schedule): with `chunks` > 1 each of the `stages` ranks
// holds `chunks` groups of consecutive blocks, chunk c of stage s being virtual stage
// c * stages + s of stages * chunks; activations go from virtual stage v to v + 1, so from the
// last stage back to the first for the next chunk. The pipeline fills `chunks` times faster.
#pragma once

#include <cstdint>
#include <vector>

namespace hftrain::parallel {

enum class PipelineSchedule {
  kGpipe,  // every micro-batch's forward, then every backward: all activations held at once
  k1f1b,   // after a warm-up of forwards (the later a stage, the fewer), one forward and one backward in turn
};

struct PipelineOp {
  bool forward = true;
  int micro = 0;
  int chunk = 0;  // which of the stage's virtual stages
  bool operator==(const PipelineOp&) const = default;
};

// What stage `stage` of `stages` runs, in order, for `micro_batches` micro-batches through each of
// its `chunks` virtual stages: each (chunk, micro-batch)'s forward once and its backward once, the
// forward first; the last op is chunk 0's backward of the last micro-batch. Interleaved (chunks >
// 1) needs micro_batches a multiple of stages (they run in groups of `stages`, as Megatron's).
// 1f1b warms up with stages - stage - 1 forwards, interleaved with 2 (stages - stage - 1) +
// (chunks - 1) stages; gpipe runs chunk by chunk, the backwards from the last chunk.
std::vector<PipelineOp> stage_schedule(PipelineSchedule schedule, int stage, int stages, int micro_batches,
                                       int chunks = 1);

// What a transfer carries: a micro-batch's activations (to the next virtual stage), their gradient
// (to the previous one), or a tied embedding's gradient from the head (last stage to the first).
enum class Payload { kActivation, kGradient, kTiedGradient };

struct PipelineTransfer {
  bool send = true;
  int peer = 0;  // the other stage
  Payload payload = Payload::kActivation;
  int micro = 0;
  int chunk = 0;  // this stage's chunk whose input or output it is
  bool operator==(const PipelineTransfer&) const = default;
};

// The exchanges around the ops of `schedule` (one stage's): exchange k runs before op k and holds
// the sends of op k - 1 and the receives op k needs; exchange ops.size() holds the last op's
// sends. Sends and receives of one exchange start together (Communicator::exchange), which keeps
// two neighbours that each send first from blocking each other. Between two stages, sends and
// receives meet in the order they are posted (NCCL and MPI without tags match them so); the
// schedules keep both sides' orders alike. With `tied`, the head's gradient of a tied embedding
// goes from the last stage after its last op to the first stage before its last op.
std::vector<std::vector<PipelineTransfer>> stage_exchanges(const std::vector<PipelineOp>& schedule, int stage,
                                                           int stages, int chunks = 1, bool tied = false);

// The most (chunk, micro-batch) pairs whose activations `schedule` holds at once (forwarded, not
// yet backward).
int activations_in_flight(const std::vector<PipelineOp>& schedule);

// Block boundaries (stages + 1 indices from 0 to the number of blocks) that balance the stages'
// parameters: `block_params` per block, `first_extra` on the first stage (embeddings),
// `last_extra` on the last (final norm, head). Every stage holds at least one block; needs
// stages <= blocks.
std::vector<int64_t> balanced_boundaries(const std::vector<int64_t>& block_params, int64_t first_extra,
                                         int64_t last_extra, int stages);

}  // namespace hftrain::parallel
