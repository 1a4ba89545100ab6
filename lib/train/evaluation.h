// Evaluation over the validation split: the mean loss per target (token, or sequence), and for a
// classifier its accuracy and F1, summed on the device and reduced over the ranks once at the end;
// for a token classifier the entity-level precision, recall, F1 and word accuracy (seqeval's,
// metrics/entities.h) over the words' first pieces, read to the host batch by batch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"
#include "data/loader.h"
#include "parallel/comm/world.h"
#include "train/step/pipeline_runner.h"
#include "train/task/task_model.h"

namespace hftrain::train {

struct EvalResult {
  double loss = 0;  // mean per target over every rank's batches; 0 when there were no targets
  int64_t targets = 0;  // the targets (tokens, or sequences) of every rank
  // classification: eval_accuracy, eval_f1; tagging: eval_precision, eval_recall, eval_f1, eval_accuracy
  std::vector<std::pair<std::string, double>> metrics;
};

// Runs `batches` (all when unset) of `loader` from its start through `model` in eval mode and
// puts the model back in training mode. `num_labels` > 0 makes it a classification evaluation;
// `tags` (the label names) a token classification's. `pipeline`: a pipelined model's stages run the
// batches through (causal language models only); the last stage's loss is summed over the pipeline.
EvalResult evaluate(TaskModel& model, data::DataLoader& loader, std::optional<int64_t> batches, int64_t num_labels,
                    config::Precision precision, parallel::World& world, const torch::Device& device,
                    const std::vector<std::string>* tags = nullptr, PipelineRunner* pipeline = nullptr);

}  // namespace hftrain::train
