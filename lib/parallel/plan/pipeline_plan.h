// Pipeline parallelism in `hftrain plan`: what each stage holds, its parameters (its blocks, the
// embeddings on the first stage, the final norm and head on the last) and its activations, which
// the schedule multiplies by the micro-batches a stage holds at once: every micro-batch of the
// step under gpipe, at most the stages from it to the last under 1f1b (schedule.h); interleaved,
// a stage's chunks each hold theirs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "parallel/pipeline/schedule.h"
#include "parallel/plan/activation_plan.h"

namespace hftrain::parallel {

struct StagePlan {
  std::vector<std::pair<int64_t, int64_t>> blocks;  // per chunk: its blocks [first, end)
  int64_t parameters = 0;                           // elements it trains
  int64_t copy = 0;                                 // the last stage's copy of a tied embedding (held, not trained)
  int in_flight = 0;                                // (chunk, micro-batch) pairs whose activations it holds at once
  double activations = 0;                           // bytes, at the most
};

// `shape`: one micro-batch of the whole model (n_layer blocks); `boundaries`: the virtual stages'
// (stages x chunks + 1); `layer_params` per block; `first_extra` / `last_extra`: the first stage's
// embeddings, the last stage's final norm and untied head; `last_copy`: a tied head's copy of the
// embedding on the last stage.
std::vector<StagePlan> plan_stages(const ActivationShape& shape, const std::vector<int64_t>& boundaries,
                                   const std::vector<int64_t>& layer_params, int64_t first_extra, int64_t last_extra,
                                   int64_t last_copy, PipelineSchedule schedule, int micro_batches, int chunks = 1);

// The lines `hftrain plan` prints for them.
std::string pipeline_summary(const std::vector<StagePlan>& stages, PipelineSchedule schedule, int micro_batches,
                             int chunks = 1);

}  // namespace hftrain::parallel
