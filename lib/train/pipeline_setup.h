// Pipeline parallelism at the start of a run: the layout's rules, checked before any work (each
// refusal names the rule and a fix), the stages' block boundaries, and the model split into this
// rank's stage.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/config.h"
#include "parallel/comm/world.h"
#include "parallel/pipeline/schedule.h"
#include "train/task_model.h"

namespace hftrain::train {

// Throws util::ConfigError when distributed.pipeline_parallel (or pipeline_stages) cannot run with
// the rest of the config: an encoder, more stages than blocks, boundaries that are not
// pipeline_parallel + 1 ascending block indices from 0 to model.n_layer, a mixture of experts,
// adapters.
void check_pipeline_parallel(const config::Config& config);

// The stages' block boundaries: distributed.pipeline_stages, or balanced by parameter count.
std::vector<int64_t> pipeline_boundaries(const config::Config& config);

parallel::PipelineSchedule pipeline_schedule(const config::Config& config);

// The config a stage's optimizer is built from: optimizer.group_lr and group_weight_decay checked
// against the whole model's parameter names `whole` (a glob that matches none is refused, as
// without stages), then only the globs that match one of the stage's names `stage` kept.
config::Config stage_config(const config::Config& config, const std::vector<std::string>& whole,
                            const std::vector<std::string>& stage);

// Keeps this rank's stage of `model` (World::pp_rank); nothing without pipeline parallelism.
void split_pipeline(TaskModel& model, parallel::World& world, const config::Config& config);

}  // namespace hftrain::train
