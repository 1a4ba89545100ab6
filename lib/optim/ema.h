// EMA weights (trainer.ema.*): an exponential moving average of the trained weights, as diffusers'
// EMAModel keeps it, for evaluation and for the model a run exports.
//
// The average is optimizer state: EmaWeights wraps the optimizer a strategy builds and, after each
// of its steps, updates one fp32 tensor per parameter it steps. So the average is sharded wherever
// the optimizer state is (zero1/2/3 each rank its pieces, tensor parallelism its slices, pipeline
// parallelism its stage's parameters), moves through checkpoints with it, and resumes exactly.
//
// The k-th update (every `every`th step; k counts from 1) with decay d_k is diffusers' own:
//   average -= (1 - d_k) (average - weights)
// d_k = 0 while k <= start_step + 1 (the average copies the weights); afterwards, with
// n = k - start_step - 1: inverse min(decay, (1 + n) / (10 + n)), power min(decay, 1 - (1 + n /
// inv_gamma)^-power), none decay; then at least min_decay. The average starts as the weights before
// the first step. A step the fused optimizer drops on the device (Optimizer::skip_next_if) leaves the
// average as it is, with no host read; it still counts as an update for the warm-up.
//
// Which weights the parameters hold (Optimizer::hold_weights_for): the trained ones to train and to
// checkpoint (the average is saved as state), the average to evaluate (config.evaluate) and to export
// (config.export_final). The switch swaps each parameter with its average in place.
//
// State: the inner optimizer's, plus "<param>/ema" (the parameter's shape, fp32) for each parameter
// once it has an average, after the inner optimizer's tensors; meta is the inner optimizer's with
// "ema": {"steps", "updates"} (the steps taken and the updates made). A saved state without averages
// (EMA turned on at a resume) starts them from the loaded weights at the next step.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "config/config.h"
#include "optim/optimizer.h"

namespace hftrain::optim {

// The state key of the averages: "<param>/ema".
inline constexpr const char* kEmaKey = "ema";

// The decay of update `update` (1-based), as diffusers' EMAModel.get_decay(update).
double ema_decay(const config::EmaConfig& config, int64_t update);

class EmaWeights : public Optimizer {
 public:
  EmaWeights(std::unique_ptr<Optimizer> inner, const config::EmaConfig& config);

  // The inner optimizer's step, then (every config.every steps) the average's update. Throws
  // std::logic_error while the parameters hold the average.
  void step() override;
  void set_lr_factor(double factor) override;
  void skip_next_if(torch::Tensor flag) override;
  bool skips_on_device() const override { return inner_->skips_on_device(); }
  OptimizerState state() const override;
  void load_state(const OptimizerState& state) override;
  bool hold_weights_for(Use use) override;
  bool keeps_two_points() const override;

  const Optimizer& inner() const { return *inner_; }
  int64_t updates() const { return updates_; }
  // The averages, one per parameter in group order (undefined before the first step); while the
  // parameters hold the average, these hold the trained weights.
  const std::vector<torch::Tensor>& averages() const { return averages_; }

 private:
  void update(double decay);
  void swap_all();

  std::unique_ptr<Optimizer> inner_;
  config::EmaConfig config_;
  std::vector<torch::Tensor> params_;    // in group order
  std::vector<torch::Tensor> averages_;  // parallel to params_; undefined until the first step
  int64_t steps_ = 0;
  int64_t updates_ = 0;
  bool swapped_ = false;  // the parameters hold the averages
};

// `inner` with an EMA of its parameters when config.enabled, else `inner` itself.
std::unique_ptr<Optimizer> with_ema(std::unique_ptr<Optimizer> inner, const config::EmaConfig& config);

}  // namespace hftrain::optim
