#include "optim/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "util/error.h"

namespace hftrain::optim {
namespace {

using config::RampShape;
using config::SchedulerName;

double warmup(int64_t step, int64_t warmup_steps) {
  return static_cast<double>(step) / static_cast<double>(std::max<int64_t>(1, warmup_steps));
}

// Progress through the decay after warmup, 0 at its start and 1 at total_steps.
double decay_progress(const ScheduleParams& p, int64_t step) {
  return static_cast<double>(step - p.warmup_steps) /
         static_cast<double>(std::max<int64_t>(1, p.total_steps - p.warmup_steps));
}

double half_cosine(double cycles, double progress) {
  return 0.5 * (1.0 + std::cos(std::numbers::pi * cycles * 2.0 * progress));
}

double floored(double factor, double floor) { return std::max(0.0, factor * (1.0 - floor) + floor); }

double wsd_factor(const ScheduleParams& p, int64_t step) {
  if (step < p.warmup_steps) {
    const double progress = warmup(step, p.warmup_steps);
    double f = progress;
    if (p.warmup_type == RampShape::kCosine) f = 0.5 * (1.0 - std::cos(std::numbers::pi * progress));
    if (p.warmup_type == RampShape::kOneMinusSqrt) f = 1.0 - std::sqrt(1.0 - progress);
    return floored(f, p.min_lr_rate);
  }
  if (step < p.warmup_steps + p.stable_steps) return 1.0;
  if (step < p.warmup_steps + p.stable_steps + p.decay_steps) {
    const double progress = static_cast<double>(step - p.warmup_steps - p.stable_steps) /
                            static_cast<double>(std::max<int64_t>(1, p.decay_steps));
    double f = 1.0 - progress;
    if (p.decay_type == RampShape::kCosine) f = half_cosine(p.num_cycles, progress);
    if (p.decay_type == RampShape::kOneMinusSqrt) f = 1.0 - std::sqrt(progress);
    return floored(f, p.min_lr_rate);
  }
  return p.min_lr_rate;
}

}  // namespace

ScheduleParams make_schedule_params(const config::SchedulerConfig& c, double base_lr, int64_t total_steps) {
  ScheduleParams p;
  p.name = c.name;
  // warmup_ratio as the Trainer's get_warmup_steps: ceil(total x ratio).
  p.warmup_steps = c.warmup_ratio ? static_cast<int64_t>(std::ceil(static_cast<double>(total_steps) * *c.warmup_ratio))
                                  : c.warmup_steps;
  p.total_steps = total_steps;
  p.num_cycles = c.num_cycles.value_or(c.name == SchedulerName::kCosineWithRestarts ? 1.0 : 0.5);
  if (c.min_lr) {
    p.min_lr_rate = *c.min_lr / base_lr;
  } else {
    p.min_lr_rate = c.min_lr_rate.value_or(0.0);
  }
  p.lr_end_rate = c.lr_end / base_lr;
  p.power = c.power;
  p.timescale = c.timescale.value_or(p.warmup_steps > 0 ? p.warmup_steps : 10000);
  p.warmup_type = c.wsd.warmup_type;
  p.decay_type = c.wsd.decay_type;
  if (c.name == SchedulerName::kWarmupStableDecay) {
    p.decay_steps = c.wsd.decay_steps.value_or(0);
    p.stable_steps = c.wsd.stable_steps.value_or(total_steps - p.warmup_steps - p.decay_steps);
    if (p.stable_steps < 0) {
      throw util::ConfigError("warmup_stable_decay: the warmup (" + std::to_string(p.warmup_steps) +
                                  ") plus scheduler.wsd.decay_steps (" + std::to_string(p.decay_steps) +
                                  ") exceed the " + std::to_string(total_steps) + " training steps",
                              "shorten the warmup or the decay, or train longer");
    }
  }
  return p;
}

double lr_factor(const ScheduleParams& p, int64_t step) {
  const bool warming = step < p.warmup_steps;
  switch (p.name) {
    case SchedulerName::kConstant:
    case SchedulerName::kReduceLrOnPlateau:
      return 1.0;
    case SchedulerName::kConstantWithWarmup:
      return warming ? warmup(step, p.warmup_steps) : 1.0;
    case SchedulerName::kLinear:
      if (warming) return warmup(step, p.warmup_steps);
      return std::max(0.0, static_cast<double>(p.total_steps - step) /
                               static_cast<double>(std::max<int64_t>(1, p.total_steps - p.warmup_steps)));
    case SchedulerName::kCosine:
      if (warming) return warmup(step, p.warmup_steps);
      return std::max(0.0, half_cosine(p.num_cycles, decay_progress(p, step)));
    case SchedulerName::kCosineWithRestarts: {
      if (warming) return warmup(step, p.warmup_steps);
      const double progress = decay_progress(p, step);
      if (progress >= 1.0) return 0.0;
      return std::max(0.0, 0.5 * (1.0 + std::cos(std::numbers::pi * std::fmod(p.num_cycles * progress, 1.0))));
    }
    case SchedulerName::kCosineWithMinLr:
      if (warming) return warmup(step, p.warmup_steps);
      return floored(half_cosine(p.num_cycles, decay_progress(p, step)), p.min_lr_rate);
    case SchedulerName::kPolynomial: {
      if (warming) return warmup(step, p.warmup_steps);
      if (step > p.total_steps) return p.lr_end_rate;
      const double remaining = 1.0 - decay_progress(p, step);
      return (1.0 - p.lr_end_rate) * std::pow(remaining, p.power) + p.lr_end_rate;
    }
    case SchedulerName::kInverseSqrt: {
      if (warming) return warmup(step, p.warmup_steps);
      const double shift = static_cast<double>(p.timescale - p.warmup_steps);
      return 1.0 / std::sqrt((static_cast<double>(step) + shift) / static_cast<double>(p.timescale));
    }
    case SchedulerName::kWarmupStableDecay:
      return wsd_factor(p, step);
  }
  return 1.0;
}

PlateauSchedule::PlateauSchedule(const config::PlateauConfig& config, double base_lr)
    : config_(config), base_lr_(base_lr) {
  state_.best = config.mode == config::PlateauMode::kMin ? std::numeric_limits<double>::infinity()
                                                         : -std::numeric_limits<double>::infinity();
}

bool PlateauSchedule::is_better(double metric) const {
  const bool rel = config_.threshold_mode == config::ThresholdMode::kRel;
  if (config_.mode == config::PlateauMode::kMin) {
    return rel ? metric < state_.best * (1.0 - config_.threshold) : metric < state_.best - config_.threshold;
  }
  return rel ? metric > state_.best * (1.0 + config_.threshold) : metric > state_.best + config_.threshold;
}

double PlateauSchedule::observe(double metric) {
  // The order of these updates is ReduceLROnPlateau.step's.
  if (is_better(metric)) {
    state_.best = metric;
    state_.num_bad = 0;
  } else {
    ++state_.num_bad;
  }
  if (state_.cooldown_left > 0) {
    --state_.cooldown_left;
    state_.num_bad = 0;
  }
  if (state_.num_bad > config_.patience) {
    const double old_lr = base_lr_ * state_.factor;
    const double new_lr = std::max(old_lr * config_.factor, config_.min_lr);
    if (old_lr - new_lr > 1e-8) state_.factor = new_lr / base_lr_;  // torch's eps
    state_.cooldown_left = config_.cooldown;
    state_.num_bad = 0;
  }
  return state_.factor;
}

}  // namespace hftrain::optim
