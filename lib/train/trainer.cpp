#include "train/trainer.h"

#include <chrono>
#include <limits>

#include <torch/torch.h>

#include "metrics/format.h"
#include "model/numeric_trace.h"
#include "parallel/comm/monitor.h"
#include "parallel/data_parallel/memory_report.h"
#include "peft/quantized_linear.h"
#include "train/report/baseline.h"
#include "train/report/device_stats.h"
#include "train/evaluation.h"
#include "train/step/numeric_debug.h"
#include "train/report/tracking.h"
#include "train/report/user_callbacks.h"
#include "train/report/metrics_callback.h"
#include "train/report/profiler_callback.h"
#include "train/step/step_math.h"
#include "train/build/trainer_builder.h"
#include "train/build/wiring.h"
#include "util/env.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/log.h"

namespace hftrain::train {

Trainer::Trainer(const config::Config& config, std::filesystem::path run_dir, const std::atomic<int>* stop_signal,
                 const std::optional<std::filesystem::path>& resume_from, parallel::World* world)
    : config_(config),
      run_dir_(std::move(run_dir)),
      stop_signal_(stop_signal),
      own_world_(world ? nullptr : parallel::World::create(launch::LaunchEnv{}, config.distributed, torch::kCPU)),
      world_(world ? world : own_world_.get()),
      device_(pick_device(config, world_->local_rank())),
      scaler_(config.trainer.precision == config::Precision::kFp16, config.trainer.fp16_init_scale,
              config.trainer.fp16_growth_interval, device_),
      best_(BestMetric::of(config.trainer)) {
  TrainerParts parts = build_trainer_parts(config_, *world_, device_, resume_from);
  tokenizer_ = std::move(parts.tokenizer);
  loaders_ = std::move(parts.loaders);
  model_ = std::move(parts.model);
  strategy_ = std::move(parts.strategy);
  peft_ = std::move(parts.peft);
  masters_ = std::move(parts.masters);
  parallel_ = std::move(parts.parallel);
  runner_ = std::move(parts.runner);
  pipeline_ = parts.pipeline;
  stop_.emplace(*world_, stop_signal_, run_dir_, device_);
  total_steps_ = plan_total_steps(config_, *loaders_.train, world_->dp_size());
  state_.total_steps = total_steps_;
  if (config_.scheduler.name == config::SchedulerName::kReduceLrOnPlateau) {
    plateau_.emplace(config_.scheduler.plateau, config_.optimizer.lr);
  }
  window_loss_ = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat32).device(device_));
  const auto& t = config_.trainer;
  judge_ = DivergenceJudge(t.spike_factor, t.spike_window, t.max_consecutive_skips);
  // skip drops a bad update on the device where the optimizer's kernel takes a flag
  // (train/step/device_skip.h); otherwise skip and stop drop it before it is applied, and spikes need
  // each step's loss: one read a step. rollback alone flags a non-finite norm on the device, read
  // with the metrics.
  if (t.on_nonfinite == config::OnNonfinite::kSkip && t.spike_factor <= 0 && !scaler_.enabled() &&
      optimizer().skips_on_device()) {
    device_skip_.emplace(device_, t.max_consecutive_skips);
  }
  judge_each_step_ = !device_skip_ && (t.on_nonfinite != config::OnNonfinite::kRollback || t.spike_factor > 0);
  if (!judge_each_step_) {
    first_bad_step_ = torch::full({}, -1, torch::TensorOptions().dtype(torch::kInt64).device(device_));
  }
}

Trainer::~Trainer() {
  if (model_) model_->set_unit_hooks(nullptr);
}

TaskModel& Trainer::model() { return *model_; }

void Trainer::start_from(const std::string& path, const std::string& what) { model_->load(path, what); }

void Trainer::hold_weights_for(optim::Optimizer::Use use) {
  if (!optimizer().keeps_two_points() || held_for_ == use) return;
  held_for_.reset();  // unknown until the switch is done
  MasterWeights::Scope masters(masters_.get());
  strategy_->hold_weights_for(use);
  held_for_ = use;
}

void Trainer::save_model(const std::filesystem::path& dir) {
  {
    parallel::PhaseScope phase(world_->monitor(), parallel::Phase::kCheckpoint);
    hold_weights_for(optim::Optimizer::Use::kExport);  // the weights to keep
    MasterWeights::Scope masters(masters_.get());  // param_dtype=bf16: the fp32 masters are what is kept
    const auto whole = parallel_->whole_model(parallel::Parallelism::Access::kSave, state_.step);
    if (world_->is_main()) {
      if (peft_) {
        save_adapter_dir(dir);
      } else {
        model_->save_dir(dir, tokenizer_options(config_).kind, *tokenizer_);
      }
      for (const auto& [name, text] : chat_template_files(config_)) util::atomic_write_file(dir / name, text);
    }
  }
  if (world_->is_main()) {
    for (auto& cb : callbacks_) cb->on_save(state_, dir);
  }
}

void Trainer::end_run(const RunEnd& end) {
  if (run_ended_) return;
  run_ended_ = true;
  for (auto& cb : callbacks_) cb->on_run_end(state_, end);
}

void Trainer::notify(const std::string& line) {
  for (auto& cb : callbacks_) cb->on_message(state_, line);
}

void Trainer::checkpoint_if_due(const ckpt::StepEvents& events, TrainResult& result) {
  const std::string reason = ckpt::save_reason(config_.checkpoint, events);
  if (reason.empty()) return;
  // rollback alone: a non-finite step since the metrics were read rolls back instead of saving
  // its weights.
  if (read_lazy_verdicts()) return;
  // One save at a time, in order; a save in flight into a run directory that is gone is dropped.
  if (events.run_dir_lost) background_.reset();
  finish_background_save();
  // The last save of a run (its end, a signal, a lost run directory) is written at once: the
  // process ends right after it.
  const bool last = events.last_step || events.signalled || events.run_dir_lost;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    if (config_.checkpoint.async_save && !last) {
      start_background_save(reason);
      return;
    }
    result.last_checkpoint = save_checkpoint();
    notify("checkpoint saved (" + reason + "): " + result.last_checkpoint->string());
  } catch (const util::IoError& e) {
    save_failed(state_.step, e);
  }
  window_stall_ms_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void Trainer::add_run_callbacks() {
  const auto& t = config_.trainer;
  if (t.early_stopping_patience) {
    callbacks_.push_back(
        std::make_shared<EarlyStopping>(*t.early_stopping_patience, t.early_stopping_threshold, best_));
  }
  // The user's own (callbacks:), after hftrain's: a plugin that fails to start stops the run here,
  // before the first step.
  for (auto& cb : make_user_callbacks(config_.callbacks, {run_dir_, world_->rank(), world_->size()})) {
    callbacks_.push_back(std::move(cb));
  }
  agrees_user_control_ = !config_.callbacks.empty() && world_->size() > 1;
  // The metrics are the first callback: they see every event before anything else reacts to it.
  // Only rank 0 writes metrics.jsonl and the event file: every rank logs the same reduced figures,
  // and two writers of one metrics.jsonl doubled each record (and could interleave them).
  const bool reports = world_->rank() == 0;
  metrics::RecorderOptions ro{.run_dir = run_dir_,
                              .total_steps = total_steps_,
                              .jsonl = reports && reports_to(config_, "jsonl"),
                              .start_step = start_step_,
                              .tensorboard = reports && reports_to(config_, "tensorboard"),
                              .mfu = mfu_options(device_, *model_, config_)};
  if (reports) {  // the trackers of logging.report_to (train/report/tracking.h): fed by the Recorder, told of the run's
                  // end
    Trackers trackers = make_trackers(config_, run_dir_);
    ro.sinks = std::move(trackers.sinks);
    callbacks_.insert(callbacks_.end(), trackers.callbacks.begin(), trackers.callbacks.end());
  }
  callbacks_.insert(callbacks_.begin(), std::make_shared<MetricsCallback>(ro));
  if (auto profiler = make_profiler_callback(util::Environment::process(), device_.is_cuda(), world_->rank())) {
    callbacks_.push_back(std::move(profiler));
  }
}

void Trainer::announce_start(TrainResult& result) {
  if (loaders_.validation && model_->causal_lm() && loaders_.datasets.train && loaders_.datasets.validation) {
    result.unigram_baseline = unigram_baseline(*loaders_.datasets.train, *loaders_.datasets.validation,
                                               config_.model.vocab_size);
    notify("unigram baseline (validation loss of token frequencies alone): " +
           std::to_string(*result.unigram_baseline));
  }
  util::log::info("training " + std::to_string(model_->non_embedding_parameters()) + " non-embedding parameters on " +
                  device_.str() + (start_step_ > 0 ? " from step " + std::to_string(start_step_) : std::string()) +
                  " to step " + std::to_string(total_steps_));
}

void Trainer::report_memory() {
  std::string line;
  if (peft_) {  // the formulas count what trains; the frozen base is replicated on every rank
    const PeftMemory m = peft_memory(*peft_, *model_);
    line = parallel_->memory_report(m.trained, m.units) + m.frozen_clause;
  } else {
    line = parallel_->memory_report(model_->parameters_by_name(), model_->unit_sizes());
  }
  util::log::info(line + (masters_ ? masters_->memory_clause() : std::string()));
}

void Trainer::note_step(int64_t step, const StepOutcome& outcome) {
  if (outcome.overflowed_at) {
    ++window_skipped_;
    notify("step " + std::to_string(step) + " skipped: inf/NaN gradients at loss scale " +
           metrics::format_number(*outcome.overflowed_at, 6) + "; the scale is now " +
           metrics::format_number(scaler_.current_scale(), 6));
  }
  state_.step = step;
  const double samples = static_cast<double>(std::max<uint64_t>(1, loaders_.train->num_samples()));
  state_.epoch = static_cast<double>(loaders_.train->cursor()) / samples;
  state_.data_wait_s = loaders_.train->data_wait_seconds();
  if (first_bad_step_.defined()) cursor_after_[step] = loaders_.train->cursor();
  if (outcome.device_skips) handle_device_skips(*outcome.device_skips, outcome.culprit);
}

void Trainer::agree_user_control() {
  if (!agrees_user_control_) return;  // one process, or no callbacks: what a callback asked stands
  // One sum over the ranks: how many raised each flag, each count in its own 15 bits.
  constexpr int64_t kBase = int64_t{1} << 15;
  const auto count = [](bool raised) -> int64_t { return raised ? 1 : 0; };
  const int64_t mine = count(state_.should_stop) + kBase * (count(state_.should_save) +
                       kBase * (count(state_.should_evaluate) + kBase * count(!state_.callback_failure.empty())));
  const int64_t all = reduce_over_ranks(mine, parallel::ReduceOp::kSum);
  state_.should_stop = all % kBase > 0;
  state_.should_save = (all / kBase) % kBase > 0;
  state_.should_evaluate = (all / kBase / kBase) % kBase > 0;
  if (all / kBase / kBase / kBase > 0 && state_.callback_failure.empty()) {
    // Every rank fails the run with it; the message is in the log of the rank whose callback failed.
    state_.callback_failure = "callbacks: a callback failed on another rank at step " + std::to_string(state_.step) +
                              " (its message is in that rank's log)";
    state_.should_stop = true;
  }
}

bool Trainer::ends_here(const StopAgreement::Decision& stop, TrainResult& result) {
  if (stop.run_dir_lost) return true;
  if (stop.signal != 0) {
    result.interrupted = true;
    result.signal = stop.signal;
    notify("signal " + std::to_string(stop.signal) + ": stopped after step " + std::to_string(state_.step));
    return true;
  }
  if (state_.should_stop) {
    const auto& t = config_.trainer;
    if (!state_.callback_failure.empty()) {
      notify("stopped after step " + std::to_string(state_.step) + ": " + state_.callback_failure);
    } else if (t.early_stopping_patience && state_.early_stopping_bad >= *t.early_stopping_patience) {
      notify("early stopping at step " + std::to_string(state_.step) + " (best " + best_.name + " at step " +
             std::to_string(state_.best_step) + ")");
    } else {
      notify("stopped after step " + std::to_string(state_.step) + ": a callback asked");
    }
    return true;
  }
  return false;
}

TrainResult Trainer::train() {
  const auto& t = config_.trainer;
  TrainResult result;
  // finish_background_save() records the checkpoints it publishes in `result` while train() runs.
  run_result_ = &result;
  struct Forget {
    TrainResult*& held;
    ~Forget() { held = nullptr; }
  } forget{run_result_};
  model_->module().train();
  const auto schedule = optim::make_schedule_params(config_.scheduler, config_.optimizer.lr, total_steps_);
  add_run_callbacks();
  state_.data_wait_s = loaders_.train->data_wait_seconds();
  NumericDebug debug(config_.debug);  // for the whole loop
  for (auto& cb : callbacks_) cb->on_train_begin(state_);
  announce_start(result);
  // Collectives between steps (logging, the stop agreement) count as training; evaluation and
  // checkpoints set their own phases.
  parallel::PhaseScope training(world_->monitor(), parallel::Phase::kTrain);
  // Whether step s (counted from 1) logs or evaluates: where figures are read from the device.
  const auto logs_at = [&](int64_t s) { return s % t.log_every == 0 || s == total_steps_; };
  const auto evaluates_at = [&](int64_t s) { return t.eval_every > 0 && (s % t.eval_every == 0 || s == total_steps_); };
  if (t.eval_on_start && state_.step == 0) run_evaluation();  // a resumed run had its start long ago
  while (state_.step < total_steps_) {
    const int64_t step = state_.step + 1;
    const double factor = optim::lr_factor(schedule, step - 1) * (plateau_ ? plateau_->factor() : 1.0);
    const uint64_t epoch_before = loaders_.train->epoch();
    const bool reads = logs_at(step) || evaluates_at(step);
    debug.set_step(step);
    const StepOutcome outcome = debug.run(step, [&] { return train_step(factor, reads); });
    note_step(step, outcome);
    if (outcome.verdict.bad) {
      if (handle_bad_step(step, outcome)) continue;  // rolled back: on from the checkpoint's step
    } else if (judge_each_step_ && !outcome.overflowed_at) {
      judge_.note_good();
    }
    state_.logging_step = logs_at(step);
    for (auto& cb : callbacks_) cb->on_step_end(state_);
    for (auto& h : step_hooks_) h->after_step(step);
    if (step == start_step_ + 1) report_memory();  // the optimizer state exists from the first step
    if (logs_at(step)) {
      if (read_lazy_verdicts()) continue;
      const StepStats s = close_log_window(factor);
      result.last_loss = s.loss;
      for (auto& cb : callbacks_) cb->on_log(state_, s);
    }
    const int64_t best_before = state_.best_step;
    const bool epoch_ended = loaders_.train->epoch() != epoch_before;
    if (evaluates_at(step) || (t.eval_on_epoch_end && epoch_ended)) {
      if (read_lazy_verdicts()) continue;
      run_evaluation();
    }
    agree_user_control();
    if (state_.should_evaluate) {  // a plugin asked, unless this step evaluated already
      state_.should_evaluate = false;
      if (state_.last_eval_step != step) {
        if (read_lazy_verdicts()) continue;
        run_evaluation();
        agree_user_control();  // what the callbacks answered to it
      }
    }
    const StopAgreement::Decision stop =
        stop_->after_step(step, /*now=*/reads, background_written_through(), background_published_through());
    // A background save every rank has written goes to rank 0's publishing; once published, the
    // ranks learn how it went (on every rank alike).
    if (background_ && !background_->publishing() && stop.written_through >= background_->step()) {
      begin_background_publish();
    } else if (background_ && background_->publishing() && stop.published_through >= background_->step()) {
      complete_background_save();
      agree_user_control();  // what the callbacks asked when told of the save, alike on every rank
    }
    result.run_dir_lost = stop.run_dir_lost;
    if (stop.run_dir_lost) {
      notify("the run directory " + run_dir_.string() + " was deleted or moved during step " +
             std::to_string(stop.noticed_after) + "; stopping with a checkpoint in a new one at that path");
    }
    // rollback alone: a non-finite step since the metrics were read must not reach the save or
    // final/ that stopping makes (the weights go back to the checkpoint before it).
    if ((stop.stop() || state_.should_stop) && read_lazy_verdicts() && !stop.stop()) continue;
    const bool save_asked = state_.should_save;
    state_.should_save = false;
    checkpoint_if_due({.step = step,
                       .signalled = stop.signal != 0,
                       .last_step = step == total_steps_ || state_.should_stop,
                       .epoch_ended = epoch_ended,
                       .new_best_eval = state_.best_step == step && state_.best_step != best_before,
                       .run_dir_lost = stop.run_dir_lost,
                       .requested = save_asked},
                      result);
    agree_user_control();  // what the callbacks asked while the step saved, before the loop stops on it
    if (ends_here(stop, result)) break;
  }
  finish_background_save();
  for (auto& cb : callbacks_) cb->on_train_end(state_);
  result.state = state_;
  return result;
}

}  // namespace hftrain::train
