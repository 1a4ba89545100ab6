#include "train/step/precision.h"

#include <ATen/autocast_mode.h>
#include <torch/torch.h>

namespace hftrain::train {

AutocastScope::AutocastScope(config::Precision precision, const torch::Device& device)
    : device_type_(device.type()) {
  if (precision == config::Precision::kFp32) return;
  active_ = true;
  prev_enabled_ = at::autocast::is_autocast_enabled(device_type_);
  prev_dtype_ = at::autocast::get_autocast_dtype(device_type_);
  at::autocast::set_autocast_dtype(device_type_, precision == config::Precision::kBf16 ? at::kBFloat16 : at::kHalf);
  at::autocast::set_autocast_enabled(device_type_, true);
  at::autocast::increment_nesting();
}

AutocastScope::~AutocastScope() {
  if (!active_) return;
  // Leaving the outermost region frees the cast weights cached for it, as torch.autocast does.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  at::autocast::set_autocast_enabled(device_type_, prev_enabled_);
  at::autocast::set_autocast_dtype(device_type_, prev_dtype_);
}

GradScaler::GradScaler(bool enabled, double init_scale, int64_t growth_interval, const torch::Device& device)
    : enabled_(enabled), growth_interval_(growth_interval) {
  auto f32 = torch::TensorOptions().dtype(torch::kFloat32).device(device);
  scale_ = torch::full({1}, init_scale, f32);
  growth_tracker_ = torch::zeros({1}, f32.dtype(torch::kInt32));
  found_inf_ = torch::zeros({1}, f32);
}

torch::Tensor GradScaler::scale(const torch::Tensor& loss) const { return enabled_ ? loss * scale_ : loss; }

void GradScaler::unscale(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> grads;
  for (const auto& p : params) {
    if (p.grad().defined()) grads.push_back(p.grad());
  }
  unscale_grads(grads);
}

void GradScaler::unscale_grads(const std::vector<torch::Tensor>& grads,
                               const std::function<void(torch::Tensor&)>& max_over_ranks) {
  if (!enabled_) return;
  found_inf_.zero_();
  auto inv_scale = scale_.to(torch::kFloat64).reciprocal().to(torch::kFloat32);
  if (!grads.empty()) at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf_, inv_scale);
  if (max_over_ranks) max_over_ranks(found_inf_);
}

bool GradScaler::found_inf() const { return enabled_ && found_inf_.item<float>() > 0; }

void GradScaler::update() {
  if (!enabled_) return;
  at::_amp_update_scale_(scale_, growth_tracker_, found_inf_, /*growth_factor=*/2.0, /*backoff_factor=*/0.5,
                         growth_interval_);
}

double GradScaler::current_scale() const { return enabled_ ? scale_.item<double>() : 1.0; }

GradScaler::State GradScaler::state() const {
  return {scale_.item<double>(), growth_tracker_.item<int64_t>()};
}

void GradScaler::load_state(const State& state) {
  scale_.fill_(state.scale);
  growth_tracker_.fill_(state.growth_tracker);
}

}  // namespace hftrain::train
