// Pipeline parallelism at the start of a run: the layout's rules, checked before any work (each
// refusal names the rule and a fix), the stages' block boundaries, and the model split into this
// rank's stage.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/config.h"
#include "model/spec.h"
#include "parallel/comm/world.h"
#include "parallel/pipeline/schedule.h"
#include "train/task/task_model.h"

namespace hftrain::train {

// Throws util::ConfigError when distributed.pipeline_parallel (or pipeline_stages,
// pipeline_virtual_stages) cannot run with the rest of the config: an encoder, more (virtual)
// stages than blocks, boundaries that are not pipeline_parallel x pipeline_virtual_stages + 1
// ascending block indices from 0 to model.n_layer, an interleaved step whose micro-batches do not
// come in groups of the stages, a mixture of experts, adapters.
// `decoder`: the decoder's spec (decoder_spec), null for an encoder.
void check_pipeline_parallel(const config::Config& config, const model::ModelSpec* decoder);

// What the stages hold besides their blocks, in parameters: the first stage's embeddings (and
// learned positions), the last stage's final norm and untied head, and a tied head's copy of the
// embedding on the last stage (held, not trained).
struct StageExtras {
  int64_t first = 0;
  int64_t last = 0;
  int64_t copy = 0;
};
StageExtras stage_extras(const model::ModelSpec& spec);

// The stages' block boundaries: distributed.pipeline_stages, or balanced by parameter count (a
// tied head's copy counted on the last stage).
std::vector<int64_t> pipeline_boundaries(const config::DistributedConfig& distributed, const model::ModelSpec& spec);

parallel::PipelineSchedule pipeline_schedule(const config::Config& config);

// Stage `stage`'s blocks among `stages` stages split at `boundaries` (virtual stages'): "0-1" or,
// interleaved, "0-1, 4-5".
std::string stage_blocks(const std::vector<int64_t>& boundaries, int stage, int stages);

// The optimizer config a stage's optimizer is built from: optimizer.group_lr and group_weight_decay
// checked against the whole model's parameter names `whole` (a glob that matches none is refused,
// as without stages), then only the globs that match one of the stage's names `stage` kept.
config::OptimizerConfig stage_optimizer_config(const config::OptimizerConfig& optimizer,
                                               const std::vector<std::string>& whole,
                                               const std::vector<std::string>& stage);

// Keeps this rank's stage of `model` (World::pp_rank); nothing without pipeline parallelism.
void split_pipeline(TaskModel& model, parallel::World& world, const config::Config& config);

}  // namespace hftrain::train
