// Schedule-Free AdamW (Defazio et al., 2024, "The Road Less Scheduled"), as the schedulefree
// package's AdamWScheduleFree (schedulefree 1.4) computes it. No learning-rate schedule: run it
// with a constant one (warmup is the optimizer's own, `warmup_steps`). Per group, at step k
// (counted from 0):
//   lr_k      = lr * min(1, (k + 1) / warmup_steps)            (lr: the group's current lr)
//   lr_max    = max(lr_max, lr_k)
//   weight    = (k + 1)^r * lr_max^weight_lr_power;  weight_sum += weight;  c = weight / weight_sum
// and per parameter with a gradient g (z starts as a copy of the parameter, v at zero):
//   v = beta2 v + (1 - beta2) g^2;   u = g / (sqrt(v / (1 - beta2^(k+1))) + eps) + wd y
//   y = (1 - c) y + c z  then  y = y + lr_k (beta1 (1 - c) - 1) u;     z = z - lr_k u
// The parameters hold y, the gradient's evaluation point, during training; the average x, the
// point to evaluate and to keep, is y's and z's combination x = (y - (1 - beta1) z) / beta1.
//
// Modes, as the package's optimizer.train() / optimizer.eval():
//   train_mode(): parameters hold y (step() requires it; a new optimizer starts here)
//   eval_mode():  parameters hold x (each parameter with state: p = lerp(p, z, 1 - 1 / beta1))
// Switching is in place and costs a pass over the parameters; a parameter without state (never
// had a gradient) holds the same value in both modes. Evaluation, export and checkpoint saving
// must see x: call eval_mode() before them and train_mode() before the next step(). The weights
// saved with a checkpoint then are x, and its optimizer state records "train_mode": false; after
// load_state() the optimizer is in the recorded mode, so that resuming (train_mode(), then step())
// turns the loaded x back into y.
//
// The package starts in eval mode and refuses step() until train(); with no state both modes hold
// the same values, so starting in train mode changes nothing. It also divides the gradient in
// place (p.grad ends up normalized); here the gradient is left alone.
//
// State keys (see optimizer.h): z, exp_avg_sq (the parameter's shape and dtype). meta "optimizer"
// is "schedule_free_adamw", no "steps" (the step count is the group's); "train_mode" (bool) and
// "schedule_free": one {"k", "weight_sum", "lr_max"} per saved group, parallel to meta "groups".
// On load each group takes the values of the saved group its parameters were in; a group whose
// parameters come from saved groups with different values is refused. "hyperparameters" records
// betas, eps, warmup_steps, r and weight_lr_power.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "optim/optimizer.h"

namespace hftrain::optim {

struct ScheduleFreeSettings {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  int64_t warmup_steps = 0;
  double r = 0.0;                // polynomial weighting of the average: (k + 1)^r
  double weight_lr_power = 2.0;  // average weights scale with lr_max^weight_lr_power
};

class ScheduleFreeAdamW : public Optimizer {
 public:
  ScheduleFreeAdamW(std::vector<ParamGroup> groups, const ScheduleFreeSettings& settings);

  // Throws std::logic_error in eval mode.
  void step() override;
  OptimizerState state() const override;
  void load_state(const OptimizerState& state) override;

  // Parameters to y (for training) or to x (for evaluation and saving); no-ops in that mode.
  void train_mode();
  void eval_mode();
  // y for Use::kTrain, x for every other use.
  bool hold_weights_for(Use use) override;
  bool keeps_two_points() const override { return true; }
  bool in_train_mode() const { return train_mode_; }

 private:
  struct GroupState {
    int64_t k = 0;  // steps taken
    double weight_sum = 0.0;
    double lr_max = -1.0;
  };
  bool set_mode(bool train);  // true when a parameter changed

  ScheduleFreeSettings settings_;
  bool train_mode_ = true;
  std::vector<GroupState> group_state_;  // one per group
  std::vector<torch::Tensor> z_;         // one per parameter, in group order; undefined: no state
  std::vector<torch::Tensor> exp_avg_sq_;
};

std::unique_ptr<ScheduleFreeAdamW> make_schedule_free_adamw(
    std::vector<ParamGroup> groups, const ScheduleFreeSettings& settings = {});

}  // namespace hftrain::optim
