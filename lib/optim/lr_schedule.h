// Learning-rate schedules with the Hugging Face Trainer's formulas (transformers.get_scheduler):
// each is a multiplier of the base learning rate as a function of the optimizer step, applied to
// every parameter group's own base rate. Pure functions of (params, step), so a resumed run needs
// only the step to continue the schedule exactly. reduce_lr_on_plateau, which depends on the eval
// history, is PlateauSchedule below.
#pragma once

#include <cstdint>

#include "config/config.h"

namespace hftrain::optim {

// Everything a step-based schedule needs, with the families' defaults filled in.
struct ScheduleParams {
  config::SchedulerName name = config::SchedulerName::kConstant;
  int64_t warmup_steps = 0;
  int64_t total_steps = 0;
  double num_cycles = 0.5;
  double min_lr_rate = 0;   // cosine_with_min_lr, warmup_stable_decay
  double lr_end_rate = 0;   // polynomial: lr_end / base lr
  double power = 1;         // polynomial
  int64_t timescale = 0;    // inverse_sqrt
  int64_t stable_steps = 0;  // warmup_stable_decay
  int64_t decay_steps = 0;   // warmup_stable_decay
  config::RampShape warmup_type = config::RampShape::kLinear;
  config::RampShape decay_type = config::RampShape::kCosine;
};

// Fills the defaults the way get_scheduler does. `total_steps` is the number of optimizer steps
// of the run (known once the data is loaded when only max_epochs is set). Throws ConfigError when
// the phases do not fit (warmup plus decay longer than training).
ScheduleParams make_schedule_params(const config::SchedulerConfig& config, double base_lr,
                                    int64_t total_steps);

// The multiplier of the base lr used by the optimizer update at 0-based `step` (LambdaLR's
// last_epoch). reduce_lr_on_plateau has no step-based part and returns 1.
double lr_factor(const ScheduleParams& params, int64_t step);

// torch.optim.lr_scheduler.ReduceLROnPlateau, as the Trainer uses it, as a multiplier of the
// base lr. Its state is plain data so that checkpoints can save and restore it exactly.
class PlateauSchedule {
 public:
  struct State {
    double factor = 1.0;        // current multiplier of the base lr
    double best = 0;            // best metric so far (initialised to the worst value)
    int64_t num_bad = 0;        // evaluations since the last improvement
    int64_t cooldown_left = 0;  // evaluations left in the cooldown
  };

  PlateauSchedule(const config::PlateauConfig& config, double base_lr);

  // Feeds one evaluation metric; returns the new multiplier.
  double observe(double metric);
  double factor() const { return state_.factor; }
  const State& state() const { return state_; }
  void restore(const State& state) { state_ = state; }

 private:
  bool is_better(double metric) const;

  config::PlateauConfig config_;
  double base_lr_;
  State state_;
};

}  // namespace hftrain::optim
