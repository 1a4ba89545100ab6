// What acts inside a training step from outside the loop, installed on the Trainer
// (Trainer::add_step_hooks) rather than written into it: the end-to-end tests' faults
// (train/step/fault_injection.h). Steps are counted from 1 (the step being run, or just finished).
#pragma once

#include <cstdint>

#include "train/task/task_model.h"

namespace hftrain::train {

class StepHooks {
 public:
  virtual ~StepHooks() = default;
  // Before the step's first forward.
  virtual void before_forward(int64_t /*step*/, TaskModel& /*model*/) {}
  // Before the step's last backward (whose reduction carries its gradients to every rank).
  virtual void before_last_backward(int64_t /*step*/, TaskModel& /*model*/) {}
  // A factor on each of the step's loss sums, gradients and all (1: none).
  virtual double loss_factor(int64_t /*step*/) { return 1.0; }
  // After the step, its callbacks and its checks.
  virtual void after_step(int64_t /*step*/) {}
};

}  // namespace hftrain::train
