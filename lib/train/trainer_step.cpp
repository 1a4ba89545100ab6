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
#include "train/device_stats.h"
#include "train/evaluation.h"
#include "train/fault_injection.h"
#include "train/step_math.h"
#include "train/trainer_builder.h"
#include "train/wiring.h"
#include "util/env.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/log.h"

namespace hftrain::train {

Trainer::StepOutcome Trainer::train_step(double lr_factor, bool read_verdicts) {
  const auto& t = config_.trainer;
  parallel::PhaseScope phase(world_->monitor(), parallel::Phase::kTrain);
  const int64_t this_step = state_.step + 1;
  step_first_sample_ = loaders_.train->cursor();
  if (test_fault_poisons_weight(world_->rank(), this_step)) poison_first_parameter(this_step, /*weight=*/true);
  const auto before_backward = [&](bool last) {
    if (last && test_fault_poisons_gradient(world_->rank(), this_step)) poison_first_parameter(this_step, false);
    strategy_->before_backward(last);
  };
  // This step's loss sum on this rank (the last stage's under pipeline parallelism).
  torch::Tensor step_loss = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat32).device(device_));
  // Back to the training point if an evaluation or a save switched the optimizer away from it.
  strategy_->set_optimizer_train_mode(true);
  optimizer().set_lr_factor(lr_factor);
  // All micro-batches of the step first: their total target count normalises each one's loss.
  std::vector<data::Batch> micro;
  int64_t step_targets = 0;
  for (int64_t m = 0; m < t.grad_accum_steps; ++m) {
    micro.push_back(loaders_.train->next());
    step_targets += micro.back().num_target_tokens;
    // Every rank's micro-batch has this shape (exactly so with packing; with padding to the
    // longest, approximately).
    state_.tokens_seen += micro.back().input_ids.numel() * world_->dp_size();
    const std::vector<uint64_t>& drawn = micro.back().source_tokens;
    if (state_.source_tokens.size() < drawn.size()) state_.source_tokens.resize(drawn.size(), 0);
    for (size_t s = 0; s < drawn.size(); ++s) state_.source_tokens[s] += static_cast<int64_t>(drawn[s]);
  }
  // The loss is divided by the step's target tokens over ALL data-parallel ranks (a tensor-parallel
  // group shares its batches), so the summed gradients equal one process's over the same global
  // batch. The count is all-reduced on the device: no sync.
  const double denom = static_cast<double>(std::max<int64_t>(1, step_targets));
  torch::Tensor global_denom;
  if (world_->dp_size() > 1) {
    auto count = torch::full({1}, step_targets, torch::TensorOptions().dtype(torch::kInt64).device(device_));
    world_->data_parallel().all_reduce(count)->wait();
    global_denom = count.clamp_min(1).to(torch::kFloat32).reshape({});
  }
  const auto normalised = [&](const torch::Tensor& loss_sum) {
    return global_denom.defined() ? loss_sum / global_denom : loss_sum / denom;
  };
  const double spiked = test_fault_spikes_loss(world_->rank(), this_step) ? 1000.0 : 1.0;  // a test's loss spike
  if (pipeline_) {
    // The micro-batches through the stages in the schedule's order; the last stage's losses.
    pipeline_->sync_tied();
    PipelineRunner::StepHooks hooks{
        .loss = [&](const torch::Tensor& loss_sum) { return scaler_.scale(normalised(loss_sum * spiked)); },
        .before_backward = before_backward};
    step_loss = pipeline_->train_step(micro, t.label_smoothing, hooks);
    if (spiked != 1.0) step_loss = step_loss * spiked;
  }
  for (size_t m = 0; m < micro.size() && !pipeline_; ++m) {
    auto& b = micro[m];
    torch::Tensor loss_sum;
    {
      AutocastScope autocast(autocast_precision(), device_);
      loss_sum = model_->loss_sum(b, t.label_smoothing, nullptr);
    }
    if (spiked != 1.0) loss_sum = loss_sum * spiked;
    torch::Tensor loss = normalised(loss_sum);
    // A mixture of experts' load-balancing loss: per micro-batch, as transformers adds it to each
    // forward's mean loss, so divided by the micro-batches and ranks the gradients are summed over.
    if (const torch::Tensor aux = model_->aux_loss(); aux.defined()) {
      loss = loss + aux / static_cast<double>(micro.size() * static_cast<size_t>(world_->dp_size()));
      window_aux_ = window_aux_.defined() ? window_aux_ + aux.detach() : aux.detach();
      ++window_aux_count_;
    }
    before_backward(m + 1 == micro.size());
    scaler_.scale(loss).backward();
    step_loss += loss_sum.detach().to(torch::kFloat32);
    // param_dtype=bf16 on one process: the micro-batches' gradients add up in fp32 (under ddp the
    // last backward reduces what autograd accumulated, so they add up in bf16 there).
    if (masters_ && world_->dp_size() == 1 && m + 1 < micro.size()) masters_->accumulate();
  }
  strategy_->after_backward();
  if (masters_) masters_->to_masters();  // clipping and the update in fp32
  std::function<void(torch::Tensor&)> sum_shards, max_shards;
  if (parallel::Communicator* shards = strategy_->shard_comm()) {
    sum_shards = [shards](torch::Tensor& x) { shards->all_reduce(x, parallel::ReduceOp::kSum)->wait(); };
    max_shards = [shards](torch::Tensor& x) { shards->all_reduce(x, parallel::ReduceOp::kMax)->wait(); };
  }
  const std::vector<torch::Tensor> grads = strategy_->grads();
  // Then summed (or maxed) over `group` as well.
  const auto also_over = [&sum_shards, &max_shards](parallel::Communicator* group) {
    sum_shards = [group, shards = sum_shards](torch::Tensor& x) {
      if (shards) shards(x);
      group->all_reduce(x, parallel::ReduceOp::kSum)->wait();
    };
    max_shards = [group, shards = max_shards](torch::Tensor& x) {
      if (shards) shards(x);
      group->all_reduce(x, parallel::ReduceOp::kMax)->wait();
    };
  };
  // Each stage holds its own parameters: their norms and overflow add up over the pipeline.
  if (world_->pp_size() > 1) also_over(&world_->pipeline_group());
  if (world_->tp_size() > 1) {
    // The tensor-parallel group's pieces together make the whole gradient: each piece's squared
    // norm once, a parameter every rank holds whole once over the group (1 / tp per rank); after
    // the sum over the data-parallel shards (zero), the sum over the group.
    also_over(&world_->tensor_parallel_group());
    if (tp_norm_weights_.empty()) tp_norm_weights_ = strategy_->norm_weights(tp_norm_weights());
  }
  scaler_.unscale_grads(grads, max_shards);
  grad_norm_ = clip_grads(grads, t.max_grad_norm, sum_shards, tp_norm_weights_);
  // The step's loss over every rank's targets, alike on every rank (on the device).
  const auto mean_loss = [&] {
    torch::Tensor total = step_loss.clone();
    if (world_->dp_size() > 1) world_->data_parallel().all_reduce(total)->wait();
    if (pipeline_) world_->pipeline_group().all_reduce(total)->wait();
    return normalised(total).reshape({});
  };
  StepOutcome outcome;
  torch::Tensor skip;  // on_nonfinite=skip on the device: the optimizer's flag
  if (scaler_.found_inf()) {
    outcome.overflowed_at = scaler_.current_scale();
  } else if (device_skip_) {
    skip = device_skip_->judge(this_step, mean_loss(), grad_norm_, step_targets);
    optimizer().skip_next_if(skip);
    unread_samples_[this_step] = {step_first_sample_, loaders_.train->cursor()};
  } else if (judge_each_step_) {
    // The loss and the gradient norm in one read from the device.
    const torch::Tensor host =
        torch::stack({mean_loss(), grad_norm_.to(step_loss.device(), torch::kFloat32).reshape({})}).to(torch::kCPU);
    outcome.verdict = judge_.judge(host[0].item<double>(), host[1].item<double>());
  } else {
    // rollback alone: the first step with a non-finite norm (alike on every rank: a NaN anywhere
    // reaches every rank's gradients), read with the metrics.
    const torch::Tensor bad = torch::isfinite(grad_norm_.reshape({})).logical_not().logical_and(first_bad_step_.lt(0));
    first_bad_step_ = torch::where(bad, torch::full_like(first_bad_step_, this_step), first_bad_step_);
  }
  if (outcome.verdict.bad) {
    outcome.culprit = first_nonfinite();  // before zero_grad
  } else {
    if (!outcome.overflowed_at) strategy_->step();
    // The logging window leaves a bad step out, as it left out its update (a step skipped on the
    // device: its loss here, its targets when the verdicts are read).
    window_loss_ += skip.defined() ? device_skip_->kept(step_loss) : step_loss;
    window_targets_ += step_targets;
  }
  if (skip.defined()) {
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

StepStats Trainer::close_log_window(double lr_factor) {
  StepStats s;
  if (world_->dp_size() > 1) {  // the window's loss over every data-parallel rank's tokens
    window_targets_ = parallel::all_reduce_value(world_->data_parallel(), window_targets_, parallel::ReduceOp::kSum,
                                                 device_);
    world_->data_parallel().all_reduce(window_loss_)->wait();
  }
  if (pipeline_) world_->pipeline_group().all_reduce(window_loss_)->wait();  // the last stage's losses
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
  if (window_aux_.defined()) {  // this rank's mean weighted load-balancing loss over the window
    s.extra.emplace_back("aux_loss", window_aux_.item<double>() / static_cast<double>(std::max<int64_t>(1, window_aux_count_)));
    window_aux_ = torch::Tensor();
    window_aux_count_ = 0;
  }
  window_skipped_ = 0;
  window_loss_.zero_();
  window_targets_ = 0;
  return s;
}

}  // namespace hftrain::train
