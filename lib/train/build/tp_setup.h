// Tensor parallelism at the start of a run: the layout's rules, checked before any work (each
// refusal names the rule and a fix), and the model split over the world's tensor-parallel group.
#pragma once

#include "config/config.h"
#include "model/encoder/bert_spec.h"
#include "model/spec.h"
#include "parallel/comm/world.h"
#include "train/task/task_model.h"

namespace hftrain::train {

// Throws util::ConfigError when distributed.tensor_parallel (or sequence_parallel) cannot run with
// the rest of the config: heads, kv heads or d_ff that it does not divide, a model, optimizer or
// adapter that is not split, sequence parallelism on an encoder or on padded batches it cannot cut.
// `decoder`: the decoder's spec (decoder_spec), null for an encoder.
void check_tensor_parallel(const config::Config& config, const model::ModelSpec* decoder);

// The same for an encoder, once its spec is read (model.from's config.json, or model.*).
void check_encoder_tensor_parallel(const model::BertSpec& spec, const config::Config& config);

// Splits `model` over the world's tensor-parallel group (World::set_tensor_parallel); nothing
// without one.
void split_model(TaskModel& model, parallel::World& world, const config::Config& config);

}  // namespace hftrain::train
