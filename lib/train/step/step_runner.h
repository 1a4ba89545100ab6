// How one step's micro-batches go forward and backward on this rank: through the whole model
// (PlainRunner, below), or through this rank's pipeline stage in the schedule's order
// (train/step/pipeline_runner.h). The step calls either the same way and never asks which it has.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include <torch/types.h>

#include "config/config.h"
#include "data/loader.h"
#include "train/task/task_model.h"

namespace hftrain::train {

class StepRunner {
 public:
  // What the step does around each micro-batch.
  struct Hooks {
    double loss_factor = 1.0;  // on each micro-batch's loss sum (a test's loss spike); 1: none
    // The loss to back-propagate from a micro-batch's loss sum, before the loss scale (the sum
    // divided by the step's targets over every rank).
    std::function<torch::Tensor(const torch::Tensor& loss_sum)> normalise;
    std::function<torch::Tensor(const torch::Tensor& loss)> scale;  // mixed precision's loss scale
    // Around each backward; `last`: the step's last, whose backward reduces the gradients.
    std::function<void(bool last)> before_backward;
    std::function<void(bool last)> after_backward;
  };
  // What the micro-batches' forwards found on this rank.
  struct Losses {
    torch::Tensor sum;  // their loss sums added up (fp32, detached; a pipeline's last stage's, 0 elsewhere)
    torch::Tensor aux;  // a mixture of experts' weighted load-balancing losses added up (undefined: none)
    int64_t aux_count = 0;
  };
  virtual ~StepRunner() = default;
  // Every micro-batch of a step, forward and backward (collective where the model is split).
  virtual Losses forward_backward(const std::vector<data::Batch>& micro, const Hooks& hooks) = 0;
  // Before each step and each evaluation (a pipeline's tied embedding made alike on its stages).
  virtual void prepare() {}
};

// The whole model on this rank: each micro-batch's forward under autocast, its loss (with a
// mixture's load-balancing loss per micro-batch, as transformers adds it to each forward's mean
// loss, divided by the micro-batches and the `dp_size` ranks the gradients are summed over), its
// backward.
class PlainRunner final : public StepRunner {
 public:
  PlainRunner(TaskModel& model, config::Precision autocast, const torch::Device& device, double label_smoothing,
              int dp_size)
      : model_(model), autocast_(autocast), device_(device), label_smoothing_(label_smoothing), dp_size_(dp_size) {}
  Losses forward_backward(const std::vector<data::Batch>& micro, const Hooks& hooks) override;

 private:
  TaskModel& model_;
  config::Precision autocast_;
  torch::Device device_;
  double label_smoothing_;
  int dp_size_;
};

}  // namespace hftrain::train
