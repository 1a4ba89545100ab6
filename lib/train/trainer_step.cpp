// The optimizer step (forward, backward, reduction, clipping, the update, the divergence verdict)
// and the logging window it feeds. The loop around it is trainer.cpp.
#include "train/trainer.h"

#include <limits>

#include <torch/csrc/autograd/anomaly_mode.h>
#include <torch/torch.h>

#include "metrics/format.h"
#include "model/numeric_trace.h"
#include "parallel/comm/monitor.h"
#include "parallel/data_parallel/memory_report.h"
#include "peft/quantized_linear.h"
#include "train/report/device_stats.h"
#include "train/evaluation.h"
#include "train/step/fault_injection.h"
#include "train/step/step_math.h"
#include "train/build/trainer_builder.h"
#include "train/build/wiring.h"
#include "util/env.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/log.h"

namespace hftrain::train {

Trainer::StepOutcome Trainer::train_step(double lr_factor, bool read_verdicts) {
  parallel::PhaseScope phase(world_->monitor(), parallel::Phase::kTrain);
  const int64_t this_step = state_.step + 1;
  step_first_sample_ = loaders_.train->cursor();
  for (auto& h : step_hooks_) h->before_forward(this_step, *model_);
  // Back to the training point if an evaluation or a save switched the optimizer away from it.
  hold_weights_for(optim::Optimizer::Use::kTrain);
  optimizer().set_lr_factor(lr_factor);
  runner_->prepare();
  int64_t step_targets = 0;
  const std::vector<data::Batch> micro = next_micro_batches(step_targets);
  // Each micro-batch's loss is divided by the step's target tokens over ALL data-parallel ranks,
  // so the summed gradients equal one process's over the same global batch (counted on the
  // device: no sync).
  const LossNormaliser normalised{static_cast<double>(std::max<int64_t>(1, step_targets)),
                                  parallel_->global_targets(step_targets)};
  StepRunner::Hooks hooks{
      .normalise = normalised,
      .scale = [this](const torch::Tensor& loss) { return scaler_.scale(loss); },
      .before_backward =
          [&](bool last) {
            for (auto& h : step_hooks_) {
              if (last) h->before_last_backward(this_step, *model_);
            }
            strategy_->before_backward(last);
          },
      .after_backward = [this](bool last) { if (masters_) masters_->after_backward(last); }};
  for (auto& h : step_hooks_) hooks.loss_factor *= h->loss_factor(this_step);
  const StepRunner::Losses losses = runner_->forward_backward(micro, hooks);
  if (losses.aux.defined()) {
    window_aux_ = window_aux_.defined() ? window_aux_ + losses.aux : losses.aux;
    window_aux_count_ += losses.aux_count;
  }
  strategy_->after_backward();
  if (masters_) masters_->to_masters();  // clipping and the update in fp32
  const std::vector<torch::Tensor> grads = strategy_->grads();
  scaler_.unscale_grads(grads, parallel_->max_gradient_pieces());
  grad_norm_ = clip_grads(grads, config_.trainer.max_grad_norm, parallel_->sum_gradient_pieces(),
                          parallel_->norm_weights());
  // The step's loss over every rank's targets, alike on every rank (on the device).
  const auto mean_loss = [&] {
    torch::Tensor total = losses.sum.clone();
    parallel_->sum_loss(total);
    return normalised(total).reshape({});
  };
  StepOutcome outcome = judge_step(this_step, mean_loss, step_targets);
  if (outcome.verdict.bad) {
    outcome.culprit = first_nonfinite();  // before zero_grad
  } else {
    if (!outcome.overflowed_at) strategy_->step();
    // The logging window leaves a bad step out, as it left out its update (a step skipped on the
    // device: its loss here, its targets when the verdicts are read).
    window_loss_ += device_skip_ && !outcome.overflowed_at ? device_skip_->kept(losses.sum) : losses.sum;
    window_targets_ += step_targets;
  }
  if (device_skip_ && !outcome.overflowed_at) {
    optimizer().skip_next_if(torch::Tensor());
    if (read_verdicts) {  // before zero_grad: a bad step's gradients can still be named
      outcome.device_skips = device_skip_->read();
      if (outcome.device_skips->last_bad_step == this_step) outcome.culprit = first_nonfinite();
    }
  }
  if (masters_) masters_->to_bf16();
  scaler_.update();
  strategy_->zero_grad();
  return outcome;
}

std::vector<data::Batch> Trainer::next_micro_batches(int64_t& targets) {
  // All micro-batches of the step first: their total target count normalises each one's loss.
  std::vector<data::Batch> micro;
  for (int64_t m = 0; m < config_.trainer.grad_accum_steps; ++m) {
    micro.push_back(loaders_.train->next());
    targets += micro.back().num_target_tokens;
    // Every rank's micro-batch has this shape (exactly so with packing; with padding to the
    // longest, approximately).
    state_.tokens_seen += micro.back().input_ids.numel() * world_->dp_size();
    const std::vector<uint64_t>& drawn = micro.back().source_tokens;
    if (state_.source_tokens.size() < drawn.size()) state_.source_tokens.resize(drawn.size(), 0);
    for (size_t s = 0; s < drawn.size(); ++s) state_.source_tokens[s] += static_cast<int64_t>(drawn[s]);
  }
  return micro;
}

Trainer::StepOutcome Trainer::judge_step(int64_t step, const std::function<torch::Tensor()>& loss, int64_t targets) {
  StepOutcome outcome;
  if (scaler_.found_inf()) {
    outcome.overflowed_at = scaler_.current_scale();
  } else if (device_skip_) {  // on_nonfinite=skip on the device: the optimizer's flag
    optimizer().skip_next_if(device_skip_->judge(step, loss(), grad_norm_, targets));
    unread_samples_[step] = {step_first_sample_, loaders_.train->cursor()};
  } else if (judge_each_step_) {
    // The loss and the gradient norm in one read from the device.
    const torch::Tensor host =
        torch::stack({loss(), grad_norm_.to(device_, torch::kFloat32).reshape({})}).to(torch::kCPU);
    outcome.verdict = judge_.judge(host[0].item<double>(), host[1].item<double>());
  } else {
    // rollback alone: the first step with a non-finite norm (alike on every rank: a NaN anywhere
    // reaches every rank's gradients), read with the metrics.
    const torch::Tensor bad = torch::isfinite(grad_norm_.reshape({})).logical_not().logical_and(first_bad_step_.lt(0));
    first_bad_step_ = torch::where(bad, torch::full_like(first_bad_step_, step), first_bad_step_);
  }
  return outcome;
}

StepStats Trainer::close_log_window(double lr_factor) {
  StepStats s;
  // The window's loss over every rank's tokens.
  window_targets_ = parallel_->sum_targets(window_targets_);
  parallel_->sum_loss(window_loss_);
  // A window whose every step was skipped has no loss to show.
  s.loss = window_targets_ > 0 ? window_loss_.item<double>() / static_cast<double>(window_targets_)
                               : window_skipped_ > 0 ? std::numeric_limits<double>::quiet_NaN() : 0.0;
  s.lr = config_.optimizer.lr * lr_factor;
  s.grad_norm = grad_norm_.item<double>();
  s.peak_mem_mb = peak_memory_mib(device_);
  if (scaler_.enabled()) s.loss_scale = scaler_.current_scale();
  s.skipped_steps = window_skipped_;  // fp16's overflows and trainer.on_nonfinite=skip's
  // A mixture's progress through each source (the loader's cursor is global: no reduction).
  const auto& sources = loaders_.datasets.train_sources;
  const std::vector<double> epochs = loaders_.train->source_epochs();
  for (size_t i = 0; i < sources.size() && i < epochs.size(); ++i) {
    const int64_t tokens = i < state_.source_tokens.size() ? state_.source_tokens[i] : 0;
    s.extra.emplace_back("data/" + sources[i].name + "/tokens", static_cast<double>(tokens));
    s.extra.emplace_back("data/" + sources[i].name + "/epoch", epochs[i]);
  }
  // The task's own figures (a preference objective's rewards and log-probs) over every rank's samples.
  if (torch::Tensor sums = model_->take_window_sums(/*evaluation=*/false); sums.defined()) {
    parallel_->sum_loss(sums);
    for (auto& m : window_means(*model_, sums)) s.extra.push_back(std::move(m));
  }
  if (window_aux_.defined()) {  // this rank's mean weighted load-balancing loss over the window
    s.extra.emplace_back("aux_loss",
                         window_aux_.item<double>() / static_cast<double>(std::max<int64_t>(1, window_aux_count_)));
    window_aux_ = torch::Tensor();
    window_aux_count_ = 0;
  }
  // The time the steps since the last logging step spent saving (a save written at once: all of it;
  // checkpoint.async: the host copy and the publishing), and the last background write's duration.
  if (window_stall_ms_ > 0) s.extra.emplace_back("checkpoint/stall_ms", window_stall_ms_);
  if (last_write_ms_) s.extra.emplace_back("checkpoint/write_ms", *last_write_ms_);
  window_stall_ms_ = 0;
  last_write_ms_.reset();
  window_skipped_ = 0;
  window_loss_.zero_();
  window_targets_ = 0;
  return s;
}

}  // namespace hftrain::train
