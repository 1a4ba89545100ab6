// Pipeline parallelism in the training loop: one step's micro-batches through this rank's stage in
// the schedule's order (parallel/pipeline/schedule.h), the activations and their gradients
// exchanged with the neighbouring stages of this rank's pipeline (World::pipeline_group); the
// forward alone for evaluation; the tied embedding kept alike on the first and last stages; and the
// whole model in one place for the scopes that save or load it.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include "config/config.h"
#include "data/loader.h"
#include "parallel/comm/world.h"
#include "parallel/seam/parallelism.h"
#include "parallel/pipeline/schedule.h"
#include "train/step/step_runner.h"
#include "train/task/task_model.h"

namespace hftrain::train {

class PipelineRunner final : public StepRunner {
 public:
  // `hooks`: the strategy's unit hooks (zero3's gathering), or null.
  PipelineRunner(TaskModel& model, parallel::World& world, const config::Config& config, const torch::Device& device,
                 model::UnitHooks* hooks);

  // Every micro-batch of a step, forward and backward, in the schedule's order (collective over
  // the pipeline). The loss sums are the last stage's (0 on the others). A tied embedding's
  // gradient from the head reaches the first stage's before its last backward, so the strategy
  // reduces the whole gradient.
  Losses forward_backward(const std::vector<data::Batch>& micro, const Hooks& hooks) override;
  // The tied embedding made alike (sync_tied).
  void prepare() override { sync_tied(); }
  // The batch's loss sum through the pipeline without gradients: on the last stage; 0 elsewhere.
  torch::Tensor forward_only(const data::Batch& batch);
  // A tied embedding: the first stage's weight into the last stage's copy (collective over the
  // pipeline; nothing without one). Before each step and each evaluation.
  void sync_tied();
  const std::vector<int64_t>& boundaries() const { return boundaries_; }
  // The memory report's clause on this rank's stage: "; pipeline stage 0 of 2: blocks 0-1, ...".
  std::string memory_clause() const;

 private:
  // A buffer for a micro-batch's activations between stages: (B, T, C), T / tp under sequence
  // parallelism.
  torch::Tensor hidden_buffer(const data::Batch& batch) const;
  torch::Tensor tied_embedding() const;  // the first stage's embedding parameter (embedding_)

  TaskModel& model_;
  parallel::World& world_;
  model::UnitHooks* hooks_;
  torch::Device device_;
  parallel::PipelineSchedule schedule_;
  std::vector<int64_t> boundaries_;
  int stage_ = 0, stages_ = 1, chunks_ = 1;
  int64_t d_model_ = 0;
  int64_t sequence_split_ = 1;
  bool tied_ = false;
  torch::ScalarType dtype_ = torch::kFloat32;
  config::Precision precision_ = config::Precision::kFp32;
  double label_smoothing_ = 0;
  torch::Tensor embedding_;  // the first stage's tied embedding, found once
};

// The whole model present for a scope, on top of the strategy's and tensor parallelism's whole
// parameters: for a save, on the main rank, every other stage's parameters received from its
// stage's first rank (collective over the pipeline of data- and tensor-parallel rank 0); for a
// load, every parameter allocated on every rank, to be filled. Ends by freeing what is not this
// stage's again. Nothing without pipeline parallelism.
class PipelineWhole final : public parallel::ScopeGuard {
 public:
  using Access = parallel::Parallelism::Access;
  PipelineWhole(TaskModel& model, parallel::World& world, const std::vector<int64_t>& boundaries, Access access,
                const torch::Device& device);
  ~PipelineWhole() override;
  PipelineWhole(const PipelineWhole&) = delete;
  PipelineWhole& operator=(const PipelineWhole&) = delete;

 private:
  TaskModel* model_ = nullptr;  // null: nothing to undo
};

}  // namespace hftrain::train
