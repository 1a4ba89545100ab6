#include "train/step/device_skip.h"

#include <torch/torch.h>

namespace hftrain::train {
namespace {
// The slots of the state vector (see the header).
constexpr int64_t kSkipped = 0, kConsecutive = 1, kDropped = 2, kLastStep = 3, kLastLoss = 4, kLastNorm = 5,
                  kLimitStep = 6, kLimitLoss = 7, kLimitNorm = 8, kSlots = 9;
}  // namespace

DeviceSkipJudge::DeviceSkipJudge(const torch::Device& device, int64_t max_consecutive)
    : max_consecutive_(max_consecutive) {
  state_ = torch::zeros({kSlots}, torch::TensorOptions().dtype(torch::kFloat64).device(device));
  state_[kLastStep].fill_(-1);
  state_[kLimitStep].fill_(-1);
}

torch::Tensor DeviceSkipJudge::judge(int64_t step, const torch::Tensor& loss, const torch::Tensor& grad_norm,
                                     int64_t targets) {
  torch::NoGradGuard no_grad;
  const torch::Tensor l = loss.detach().reshape({}).to(torch::kFloat64);
  const torch::Tensor n = grad_norm.detach().reshape({}).to(state_.device(), torch::kFloat64);
  const torch::Tensor s = state_;
  const torch::Tensor nonfinite = torch::isfinite(l).logical_and(torch::isfinite(n)).logical_not();
  const torch::Tensor latched = s[kLimitStep].ge(0);
  const torch::Tensor bad = nonfinite.logical_or(latched);
  const torch::Tensor b = bad.to(torch::kFloat64);
  const torch::Tensor consecutive = (s[kConsecutive] + 1) * b;
  torch::Tensor reached = torch::zeros_like(nonfinite);
  if (max_consecutive_ > 0) {
    reached =
        nonfinite.logical_and(latched.logical_not()).logical_and(consecutive.ge(static_cast<double>(max_consecutive_)));
  }
  const double at = static_cast<double>(step);
  state_ = torch::stack({s[kSkipped] + b, consecutive, s[kDropped] + b * static_cast<double>(targets),
                         torch::where(nonfinite, at, s[kLastStep]), torch::where(nonfinite, l, s[kLastLoss]),
                         torch::where(nonfinite, n, s[kLastNorm]), torch::where(reached, at, s[kLimitStep]),
                         torch::where(reached, l, s[kLimitLoss]), torch::where(reached, n, s[kLimitNorm])});
  last_flag_ = bad;
  pending_ = true;
  return b.to(torch::kFloat32);
}

torch::Tensor DeviceSkipJudge::kept(const torch::Tensor& loss_sum) const {
  // where, not a product: a skipped step's loss is often NaN, and NaN x 0 is NaN.
  return torch::where(last_flag_, torch::zeros_like(loss_sum), loss_sum);
}

DeviceSkipJudge::Report DeviceSkipJudge::read() {
  const torch::Tensor h = state_.to(torch::kCPU);
  const auto* v = h.data_ptr<double>();
  Report r;
  r.skipped = static_cast<int64_t>(v[kSkipped]);
  r.dropped_targets = static_cast<int64_t>(v[kDropped]);
  r.consecutive = static_cast<int64_t>(v[kConsecutive]);
  r.last_bad_step = r.skipped > 0 ? static_cast<int64_t>(v[kLastStep]) : -1;
  r.last_loss = v[kLastLoss];
  r.last_norm = v[kLastNorm];
  r.limit_step = static_cast<int64_t>(v[kLimitStep]);
  r.limit_loss = v[kLimitLoss];
  r.limit_norm = v[kLimitNorm];
  state_[kSkipped].zero_();
  state_[kDropped].zero_();
  pending_ = false;
  return r;
}

}  // namespace hftrain::train
