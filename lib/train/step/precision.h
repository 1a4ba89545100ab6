// Mixed precision: autocast regions and fp16 dynamic loss scaling. LibTorch has autocast but no
// GradScaler, so the scaler here drives the same ATen kernels torch.amp.GradScaler uses
// (_amp_foreach_non_finite_check_and_unscale_, _amp_update_scale_).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include <torch/types.h>

#include "config/config.h"

namespace hftrain::train {

// Enables autocast to `dtype` on `device` for its lifetime (no-op for fp32).
class AutocastScope {
 public:
  AutocastScope(config::Precision precision, const torch::Device& device);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool active_ = false;
  c10::DeviceType device_type_;
  bool prev_enabled_ = false;
  at::ScalarType prev_dtype_;
};

// torch.amp.GradScaler's algorithm: multiply the loss by the scale; before the step, unscale the
// gradients and check them for inf/NaN; skip the step when found, then back off (x0.5); grow
// (x2) after growth_interval clean steps.
class GradScaler {
 public:
  GradScaler(bool enabled, double init_scale, int64_t growth_interval, const torch::Device& device);

  bool enabled() const { return enabled_; }
  torch::Tensor scale(const torch::Tensor& loss) const;
  // Unscales the gradients in place and records whether any is inf/NaN (on the device).
  void unscale(const std::vector<torch::Tensor>& params);
  // The same over gradient tensors directly; `max_over_ranks` (sharded gradients) makes every
  // rank see an inf/NaN that any rank found.
  void unscale_grads(const std::vector<torch::Tensor>& grads,
                     const std::function<void(torch::Tensor&)>& max_over_ranks = {});
  // After unscale: true when the step should be skipped. Synchronises with the device.
  bool found_inf() const;
  // Adjusts the scale for the next step.
  void update();
  double current_scale() const;

  // What a checkpoint keeps: the scale and the clean steps since the last change.
  struct State {
    double scale = 1.0;
    int64_t growth_tracker = 0;
  };
  State state() const;
  void load_state(const State& state);

 private:
  bool enabled_;
  int64_t growth_interval_;
  torch::Tensor scale_;           // (1,) float32 on the device
  torch::Tensor growth_tracker_;  // (1,) int32 on the device
  torch::Tensor found_inf_;       // (1,) float32 on the device
};

}  // namespace hftrain::train
