// The training loop for one process on the CPU or one GPU: micro-batches accumulated with the
// loss normalised by the step's target tokens, global-norm clipping, mixed precision, the LR
// schedule, periodic evaluation, checkpoints, non-finite and divergent steps skipped, rolled back
// or stopped on (trainer.on_nonfinite), and callbacks for metrics and early stopping. No host
// synchronisation inside a step except on logging steps: the default trainer.on_nonfinite=skip
// judges each step on the device and the fused optimizer drops a bad update there
// (train/step/device_skip.h); one value a step is read only where a bad step's update must be dropped
// before it is applied and the device cannot do it (trainer.on_nonfinite=stop, spikes, an optimizer
// without a device flag; fp16 needs one to skip overflowed steps). Everything the loop carries from one step to the
// next is a member, so a checkpoint (trainer_checkpoint.cpp) saves it and restore() continues bit for bit on the CPU.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ckpt/optimizer_save.h"
#include "ckpt/run_lock.h"
#include "ckpt/save_policy.h"
#include "config/config.h"
#include "data/loader.h"
#include "model/weights/safetensors.h"
#include "optim/lr_schedule.h"
#include "optim/optimizer.h"
#include "parallel/comm/world.h"
#include "parallel/data_parallel/strategy.h"
#include "parallel/seam/parallelism.h"
#include "tokenizer/tokenizer.h"
#include "train/best_metric.h"
#include "train/callbacks.h"
#include "train/step/device_skip.h"
#include "train/step/master_weights.h"
#include "train/step/divergence.h"
#include "train/step/precision.h"
#include "train/build/peft_setup.h"
#include "train/step/pipeline_runner.h"
#include "train/step/step_hooks.h"
#include "train/step/step_runner.h"
#include "train/step/stop_agreement.h"
#include "train/state/background_save.h"
#include "train/state/checkpoint_snapshot.h"
#include "train/task/task_model.h"

namespace hftrain::train {

// What a checkpoint records about the run besides its state.
struct RunRecord {
  std::string config_yaml;  // the resolved config (config.yaml), which resume reads back
  std::string config_hash;  // hash of the config's values, in the manifest
  std::vector<std::string> command_line;
};

struct TrainResult {
  TrainState state;
  double last_loss = 0;  // mean loss of the last logging window
  std::optional<double> unigram_baseline;  // validation loss of token frequencies alone
  bool interrupted = false;
  int signal = 0;        // the signal that interrupted training, if any
  std::optional<std::filesystem::path> last_checkpoint;  // saved by this process
  // The run directory was deleted or moved during training: the loop stopped after `state.step`
  // and saved a checkpoint into the directory recreated at its path (all ranks agree).
  bool run_dir_lost = false;
};

class Trainer {
 public:
  // Builds tokenizer, data, model and optimizer from the config (throws ConfigError/DataError
  // for bad input before any training). `stop_signal`, set by a signal handler, makes the loop
  // finish the current step and return.
  // `resume_from`: the checkpoint that will be restored, so model.from is not read (its weights
  // would be replaced, and the directory may be gone by now); a BERT classifier takes its shape
  // and labels from the checkpoint instead.
  // `world`: this process's place in a multi-process job (parallel/comm/world.h); null for one process.
  // Every rank constructs its Trainer with the same config; rank 0 prepares the data first and
  // the others then read its token cache.
  Trainer(const config::Config& config, std::filesystem::path run_dir, const std::atomic<int>* stop_signal = nullptr,
          const std::optional<std::filesystem::path>& resume_from = std::nullopt, parallel::World* world = nullptr);
  ~Trainer();

  void add_callback(std::shared_ptr<Callback> callback) { callbacks_.push_back(std::move(callback)); }
  // What acts inside each step from outside the loop (train/step/step_hooks.h: the tests' faults).
  void add_step_hooks(std::shared_ptr<StepHooks> hooks) { step_hooks_.push_back(std::move(hooks)); }
  void set_run_record(RunRecord record) { record_ = std::move(record); }

  // Continues from a checkpoint directory (verified by the caller): weights, optimizer, loss
  // scaler, LR schedule, RNG, data position and trainer state. Throws CheckpointError naming the
  // file for a checkpoint that does not fit this config; ConfigError when it is already at or
  // past this config's last step. `allow_data_change` (resume --force) accepts training data
  // whose sample count differs from the checkpoint's.
  void restore(const std::filesystem::path& checkpoint_dir, bool allow_data_change = false);
  // Trains from the current step (0, or the restored one) to the end, a signal or early stop.
  // Checkpoints follow config.checkpoint; a failed save throws IoError unless
  // checkpoint.on_save_error=continue.
  TrainResult train();
  // Mean loss per target token over the validation split (or trainer.eval_batches of it).
  double evaluate();
  // Saves the model and its tokenizer as a model directory (what `generate` and model.from read)
  // and tells the callbacks (on_save).
  void save_model(const std::filesystem::path& dir);
  // trainer.load_best_model_at_end: the weights of the best evaluation's checkpoint (kept by
  // checkpoint.keep_best) in place of the last step's, for the final model; nothing when the last
  // step is the best, or there was no evaluation. Throws CheckpointError when that checkpoint is gone.
  void load_best_model();
  // Tells the callbacks how the run ended (on_run_end), once: after the final model is saved, or
  // when training failed. Later calls do nothing.
  void end_run(const RunEnd& end);
  // Writes <run_dir>/checkpoint-<step>/ crash-safely, updates `latest`, applies keep_last and
  // keep_best, and tells the callbacks. Throws IoError (disk full, read-only) leaving earlier
  // checkpoints intact.
  std::filesystem::path save_checkpoint();

  const TrainState& state() const { return state_; }
  const data::DataLoader& train_loader() const { return *loaders_.train; }

  TaskModel& model();
  const tokenizer::Tokenizer& tokenizer() const { return *tokenizer_; }
  const torch::Device& device() const { return device_; }
  parallel::World& world() { return *world_; }
  const parallel::ShardingStrategy& strategy() const { return *strategy_; }
  int64_t total_steps() const { return total_steps_; }

 private:
  // Copies the weights of a model directory or checkpoint of this model's shape; `what` names the
  // source in messages (model.from, resume).
  void start_from(const std::string& path, const std::string& what);
  // LoRA: the trained tensors of checkpoint `dir` (the base is model.from's, checked by fingerprint).
  void restore_trained(const std::filesystem::path& dir, bool allow_base_change);
  // LoRA: the trained tensors (adapters and saved modules) of checkpoint `dir` into the model.
  void load_trained(const std::filesystem::path& dir);
  // The optimizer state of the checkpoint `dir` (every rank its pieces), EMA weights dropped when
  // trainer.ema is off; `resuming`: a resume (not the best checkpoint's state at the end), logged.
  void load_optimizer_state(const std::filesystem::path& dir, bool resuming);
  // LoRA: final/ as peft's adapter directory with the tokenizer beside it.
  void save_adapter_dir(const std::filesystem::path& dir) const;
  // What train_step found: fp16's overflow (the loss scale the gradients overflowed at), or a step
  // judged bad (train/step/divergence.h) with the first non-finite parameter or gradient found. Either
  // way the update was not applied.
  // `device_skips`: what the steps judged on the device did since the last read, when this step
  // read it (`culprit` then names the first non-finite of this step, if it was bad).
  struct StepOutcome {
    std::optional<double> overflowed_at;
    Verdict verdict;
    std::string culprit;
    std::optional<DeviceSkipJudge::Report> device_skips;
  };
  // One optimizer step: micro-batches, backward, clipping, the update (unless dropped, above).
  // `read_verdicts`: a step whose figures are read anyway (logging, evaluation) also reads the
  // device's verdicts, before the gradients are zeroed.
  StepOutcome train_step(double lr_factor, bool read_verdicts);
  // trainer.on_nonfinite and trainer.spike.* (trainer_divergence.cpp): acts on step `step`'s bad
  // verdict; true when the run rolled back (the loop goes on from the checkpoint's step). Throws
  // util::DivergedError to stop.
  bool handle_bad_step(int64_t step, const StepOutcome& outcome);
  // rollback without spikes: reads the device's flag of a non-finite gradient norm since the last
  // read and rolls back when it is set (true). Where the metrics are read, and before saves.
  bool rolled_back_lazily();
  // Acts on the device's verdicts (on_nonfinite=skip): counts the skipped steps into the logging
  // window, reports the last one, and stops the run (util::DivergedError) when max_consecutive_skips
  // was reached. `culprit`: this step's first non-finite, when known.
  void handle_device_skips(const DeviceSkipJudge::Report& report, const std::string& culprit);
  // Where figures are read (metrics, evaluation, saves, the end): the device's verdicts since the
  // last read, then rollback's flag (true when the run rolled back).
  bool read_lazy_verdicts();
  // Reloads the newest checkpoint before `bad_step` that verifies and moves the data to
  // `skip_to`, past the samples that led to it. Throws util::DivergedError when none verifies.
  void roll_back(int64_t bad_step, const std::string& why, uint64_t skip_to);
  // Saves the state (the bad update dropped) and throws util::DivergedError naming the step.
  [[noreturn]] void stop_diverged(int64_t step, const std::string& why, const std::string& culprit, bool save);
  // The first parameter, then gradient, of this rank holding an inf or NaN ("" when none is found).
  std::string first_nonfinite() const;
  // The logging window's figures (one host sync, and one all-reduce over the ranks); resets it.
  StepStats close_log_window(double lr_factor);
  // evaluate(), then the bookkeeping: the last and best figures (trainer.metric_for_best_model),
  // the plateau schedule and the callbacks. At step 0 (trainer.eval_on_start) only the figures and
  // the callbacks: nothing has been trained to rank.
  void run_evaluation();
  // Saves when the checkpoint policy says so (ckpt/save_policy.h); a failed save throws unless
  // checkpoint.on_save_error=continue.
  void checkpoint_if_due(const ckpt::StepEvents& events, TrainResult& result);
  // Rank 0's part of save_checkpoint(): the files, the commit, rotation, callbacks.
  // `staged`: the optimizer shard files every rank wrote (ckpt/optimizer_save.h), adopted here.
  std::filesystem::path write_checkpoint(const model::TensorList& rng, double window_loss_sum, int64_t window_targets,
                                         const ckpt::StagedOptimizer& staged);
  // Everything the main rank writes into a checkpoint of this step, inside the scopes a save opens
  // (the whole model gathered): the live tensors, or with `copies` host copies of them.
  CheckpointSnapshot snapshot_checkpoint(const model::TensorList& rng, double window_loss_sum,
                                         int64_t window_targets, HostCopies* copies);
  // Rank 0: commits `writer` (every file written), rotates, tells the callbacks (as of `at_save`).
  std::filesystem::path commit_checkpoint(ckpt::CheckpointWriter& writer, const CheckpointSnapshot& snapshot,
                                          TrainState& at_save);
  // A save that failed: thrown under checkpoint.on_save_error=stop, told and dropped under continue.
  void save_failed(int64_t step, const util::IoError& e);
  // checkpoint.async (train/state/background_save.h): the collective parts and the host copies
  // now, the writing on a thread. Every rank at the same point (the stop agreement says so):
  // begin_background_publish once every rank has written (the shard records exchanged, rank 0's
  // publishing started on a thread), complete_background_save once rank 0 has published (its
  // outcome agreed, the callbacks told). finish_background_save does what is left of both at once:
  // before the next save, a rollback or a stop for divergence, and at the end of the run. Each is
  // nothing when no save is in flight (or it is past that phase).
  void start_background_save(const std::string& reason);
  void begin_background_publish();
  void complete_background_save(bool waited = false);  // `waited`: from finish_background_save (said so)
  void finish_background_save();
  // The step of the in-flight save once this rank's part of the phase it is in is done; -1 otherwise.
  int64_t background_written_through() const;
  int64_t background_published_through() const;
  std::unique_ptr<BackgroundSave> background_;
  std::shared_ptr<HostCopies> host_copies_;  // the buffers, kept from one save to the next
  TrainState background_state_;              // the state as of the in-flight save (its callbacks')
  std::string background_reason_;
  double background_write_ms_ = 0;  // how long its files took
  TrainResult* run_result_ = nullptr;  // train()'s result while it runs (its last checkpoint)
  double window_stall_ms_ = 0;         // the steps' time spent saving since the last logging step
  std::optional<double> last_write_ms_;  // the last background write's duration, until logged
  void notify(const std::string& line);

  config::Config config_;
  std::filesystem::path run_dir_;
  const std::atomic<int>* stop_signal_;
  std::unique_ptr<parallel::World> own_world_;  // when constructed without one: a world of one
  parallel::World* world_ = nullptr;
  torch::Device device_;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer_;
  data::Loaders loaders_;
  std::unique_ptr<TaskModel> model_;
  std::unique_ptr<parallel::ShardingStrategy> strategy_;  // owns the optimizer (sharded under zero)
  std::optional<PeftRun> peft_;                            // LoRA: adapters on a frozen base
  std::unique_ptr<MasterWeights> masters_;  // trainer.param_dtype=bf16: fp32 masters of bf16 weights
  std::unique_ptr<parallel::Parallelism> parallel_;  // the one seam with the parallel layout
  std::unique_ptr<StepRunner> runner_;               // forward and backward of a step's micro-batches
  PipelineRunner* pipeline_ = nullptr;               // `runner_` under pipeline parallelism (evaluation's)
  std::vector<std::shared_ptr<StepHooks>> step_hooks_;
  std::optional<StopAgreement> stop_;  // whether (and after which step) every rank stops
  // The autocast precision of forwards: none where the weights are bf16 themselves.
  config::Precision autocast_precision() const {
    return masters_ ? config::Precision::kFp32 : config_.trainer.precision;
  }
  int64_t total_steps_ = 0;
  std::vector<std::shared_ptr<Callback>> callbacks_;
  bool run_ended_ = false;
  RunRecord record_;

  // Carried from step to step (and saved in checkpoints).
  TrainState state_;
  GradScaler scaler_;
  std::optional<optim::PlateauSchedule> plateau_;
  BestMetric best_;  // trainer.metric_for_best_model, greater_is_better
  torch::Tensor window_loss_;   // loss sum since the last logging step, on the device
  torch::Tensor window_aux_;    // weighted auxiliary (load-balancing) losses since then, summed
  int64_t window_aux_count_ = 0;
  int64_t window_targets_ = 0;  // target tokens in that window
  int64_t window_skipped_ = 0;  // fp16: steps of that window skipped for inf/NaN gradients
  torch::Tensor grad_norm_;
  int64_t start_step_ = 0;      // the restored step (0 for a new run)
  // trainer.on_nonfinite, trainer.spike.*: the judge; whether it reads each step's loss and norm;
  // rollback without spikes: the first step since the last read whose gradient norm was not
  // finite (-1: none; undefined otherwise), on the device, and the data cursor after each step
  // since then.
  DivergenceJudge judge_{0, 1, 0};
  bool judge_each_step_ = false;
  torch::Tensor first_bad_step_;
  // skip judged on the device (the default); each unread step's samples (first, end).
  std::optional<DeviceSkipJudge> device_skip_;
  std::map<int64_t, std::pair<uint64_t, uint64_t>> unread_samples_;
  std::map<int64_t, uint64_t> cursor_after_;
  uint64_t step_first_sample_ = 0;  // the data cursor before the current step
  int64_t last_rollback_step_ = -1;  // the checkpoint step the last rollback went to
  int64_t same_rollbacks_ = 0;       // rollbacks to it so far
  bool rolling_back_ = false;        // restore() called by roll_back()

  // A host value summed (or maxed) over all ranks (no-op for one rank).
  int64_t reduce_over_ranks(int64_t value, parallel::ReduceOp op) { return parallel_->agree(value, op); }
  optim::Optimizer& optimizer() { return strategy_->optimizer(); }
  // The weights `use` needs in the parameters (optim::Optimizer::hold_weights_for: schedule_free_adamw's
  // y or x, EMA's trained weights or average), switched inside a MasterWeights scope so that under
  // trainer.param_dtype=bf16 the fp32 masters switch and the bf16 copies are rounded from them.
  // Nothing for optimizers that keep one set, or when the parameters hold them already.
  void hold_weights_for(optim::Optimizer::Use use);
  std::optional<optim::Optimizer::Use> held_for_;  // unknown at first and after a restore
  // train()'s parts: the run's callbacks (metrics first, trackers, profiler, early stopping); the
  // baseline and the first line; the step's outcome noted in the state and told; whether the loop
  // ends after this step (a signal, a lost run directory, early stopping), said.
  void add_run_callbacks();
  // What the user's callbacks asked (stop, save, evaluate; a required command's failure stops)
  // made the same on every rank: they run on rank 0 (a plugin with ranks: all on each rank on its
  // own), and all must act alike. A no-op for one process or without callbacks.
  void agree_user_control();
  bool agrees_user_control_ = false;  // there are callbacks, and several processes
  void announce_start(TrainResult& result);
  void note_step(int64_t step, const StepOutcome& outcome);
  bool ends_here(const StopAgreement::Decision& stop, TrainResult& result);
  // After the first step, when the optimizer state exists: the memory this rank holds beside the
  // formulas, in one log line.
  void report_memory();
  // The step's micro-batches, counted into the trainer state; their target count.
  std::vector<data::Batch> next_micro_batches(int64_t& targets);
  // The verdict on this step (train_step's): fp16's overflow, the device's flag of a bad step, a
  // judge that reads each step, or rollback's flag; `loss` gives the step's mean loss over all ranks.
  StepOutcome judge_step(int64_t step, const std::function<torch::Tensor()>& loss, int64_t targets);
};

}  // namespace hftrain::train
