// trainer.on_nonfinite=skip judged on the device, so that a step never waits for the host: each
// step's verdict is a () float32 flag computed from its loss and gradient norm, which the
// optimizer's fused kernel takes as its found-inf flag (optim::Optimizer::skip_next_if). What the
// steps did (how many were skipped, the last bad one's figures, the run of bad steps in a row) stays
// on the device until the trainer reads it: on logging and evaluation steps, before saves and at
// the end, one small copy to the host with the metrics.
//
// trainer.max_consecutive_skips: the step that makes that many bad steps in a row latches every
// later update off (the weights stay those of that step, as a stop there would leave them), and the
// next read stops the run naming that step.
#pragma once

#include <cstdint>

#include <torch/types.h>

namespace hftrain::train {

class DeviceSkipJudge {
 public:
  // `max_consecutive`: bad steps in a row that stop the run (0: never).
  DeviceSkipJudge(const torch::Device& device, int64_t max_consecutive);

  // Judges step `step` from its loss (the mean over every rank's targets) and its global gradient
  // norm, both () tensors on the device, alike on every rank. Returns the skip flag for the
  // optimizer: 1 when either is not finite, or after the limit above; 0 otherwise. `targets`: this
  // rank's target tokens of the step, taken out of the logging window when it is skipped.
  torch::Tensor judge(int64_t step, const torch::Tensor& loss, const torch::Tensor& grad_norm, int64_t targets);
  // What the logging window adds for the step just judged: its loss sum, or 0 when it was skipped.
  torch::Tensor kept(const torch::Tensor& loss_sum) const;

  // Steps judged since the last read.
  bool pending() const { return pending_; }
  struct Report {
    int64_t skipped = 0;          // updates skipped since the last read
    int64_t dropped_targets = 0;  // their target tokens (this rank's)
    int64_t consecutive = 0;      // bad steps in a row now
    int64_t last_bad_step = -1;   // the newest step whose loss or norm was not finite (-1: none)
    double last_loss = 0, last_norm = 0;
    int64_t limit_step = -1;      // the step that reached max_consecutive (-1: none)
    double limit_loss = 0, limit_norm = 0;
  };
  // One host read (synchronises with the device); the next report counts from here. The run of
  // bad steps goes on across reads.
  Report read();

 private:
  // (9,) float64: skipped, consecutive, dropped targets, last bad step, its loss, its norm, limit
  // step, its loss, its norm (steps -1 when none).
  torch::Tensor state_;
  torch::Tensor last_flag_;  // the last judge()'s flag, bool
  int64_t max_consecutive_;
  bool pending_ = false;
};

}  // namespace hftrain::train
