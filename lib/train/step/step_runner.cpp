#include "train/step/step_runner.h"

#include <torch/torch.h>

#include "train/step/precision.h"

namespace hftrain::train {

StepRunner::Losses PlainRunner::forward_backward(const std::vector<data::Batch>& micro, const Hooks& hooks) {
  Losses out;
  out.sum = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat32).device(device_));
  for (size_t m = 0; m < micro.size(); ++m) {
    const bool last = m + 1 == micro.size();
    torch::Tensor loss_sum;
    {
      AutocastScope autocast(autocast_, device_);
      loss_sum = model_.loss_sum(micro[m], label_smoothing_, nullptr);
    }
    if (hooks.loss_factor != 1.0) loss_sum = loss_sum * hooks.loss_factor;
    torch::Tensor loss = hooks.normalise(loss_sum);
    if (const torch::Tensor aux = model_.aux_loss(); aux.defined()) {
      loss = loss + aux / static_cast<double>(micro.size() * static_cast<size_t>(dp_size_));
      out.aux = out.aux.defined() ? out.aux + aux.detach() : aux.detach();
      ++out.aux_count;
    }
    hooks.before_backward(last);
    hooks.scale(loss).backward();
    out.sum += loss_sum.detach().to(torch::kFloat32);
    hooks.after_backward(last);
  }
  return out;
}

}  // namespace hftrain::train
