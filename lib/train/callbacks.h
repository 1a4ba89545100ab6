// The trainer's callback interface. Metrics, evaluation bookkeeping and early stopping are
// callbacks themselves, so user-facing behaviour and extensions go through one surface.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "train/best_metric.h"

namespace hftrain::train {

// What callbacks see; `should_stop` is theirs to set.
struct TrainState {
  int64_t step = 0;         // optimizer steps done
  int64_t total_steps = 0;
  double epoch = 0;         // fractional epochs of training data consumed
  int64_t tokens_seen = 0;  // input tokens processed
  // A weighted mixture: the tokens drawn from each training source so far (padding not counted),
  // in source order.
  std::vector<int64_t> source_tokens;
  double data_wait_s = 0;   // total time the loop waited for training data
  std::optional<double> best_eval_loss;  // the lowest eval loss (the run summaries' figure)
  // The best evaluation by trainer.metric_for_best_model (train/best_metric.h): its value, the
  // metric's name, its step; and the metric's value at the last evaluation.
  std::optional<double> best_metric;
  std::string best_metric_name;
  int64_t best_step = 0;
  std::optional<double> last_metric;
  std::optional<double> last_eval_loss;
  int64_t last_eval_step = 0;
  // Early stopping's own record: the best metric by its threshold rule, evaluations since.
  std::optional<double> early_stopping_best;
  int64_t early_stopping_bad = 0;
  bool should_stop = false;
  bool logging_step = false;  // this step's figures are read and on_log follows its on_step_end
  // What the user's callbacks asked of the loop after this step (include/hftrain/plugin.h), and a
  // callback's failure, which stops the run (exit 1 after the usual checkpoint). Not checkpointed.
  bool should_save = false;
  bool should_evaluate = false;
  std::string callback_failure;
  // The last evaluation's other metrics (classification: eval_accuracy, eval_f1); not checkpointed.
  std::vector<std::pair<std::string, double>> last_eval_metrics;
};

// One logging step's figures (synchronised with the device only on logging steps).
struct StepStats {
  double loss = 0;  // mean per target token over the logging window
  // More figures by name, in this order: a mixture's data/<source>/tokens and data/<source>/epoch.
  std::vector<std::pair<std::string, double>> extra;
  double lr = 0;
  double grad_norm = 0;
  std::optional<double> peak_mem_mb;
  // fp16 only: the loss scale now, and the steps since the last logging step that were skipped
  // because their gradients overflowed.
  std::optional<double> loss_scale;
  int64_t skipped_steps = 0;
};

// How a run ended, for the callbacks that report it (a tracker's run status).
struct RunEnd {
  enum class Status { kFinished, kInterrupted, kFailed };
  Status status = Status::kFinished;
  std::optional<std::filesystem::path> final_model;  // the model directory written at the end
  std::string error;                                 // kFailed: the error as the user saw it
};

class Callback {
 public:
  virtual ~Callback() = default;
  virtual void on_train_begin(TrainState&) {}
  virtual void on_step_end(TrainState&) {}                    // every step (cheap)
  virtual void on_log(TrainState&, const StepStats&) {}       // logging steps
  virtual void on_evaluate(TrainState&, double /*eval_loss*/) {}
  virtual void on_save(TrainState&, const std::filesystem::path&) {}
  virtual void on_train_end(TrainState&) {}
  virtual void on_message(TrainState&, const std::string& /*line*/) {}  // things worth telling the user
  // After on_train_end and the final model's save, or when training failed on an error (then
  // without on_train_end). Called once, on the process that made the callbacks.
  virtual void on_run_end(TrainState&, const RunEnd&) {}
};

// Stops training after `patience` evaluations whose trainer.metric_for_best_model (TrainState's
// last_metric; the eval loss where unset) did not beat the best by more than `threshold` in its
// direction (the Trainer's EarlyStoppingCallback). The evaluation at the start (step 0) does not
// count. Its counters live in TrainState, so a checkpoint carries them.
class EarlyStopping : public Callback {
 public:
  EarlyStopping(int64_t patience, double threshold, BestMetric metric = {})
      : patience_(patience), threshold_(threshold), metric_(std::move(metric)) {}
  void on_evaluate(TrainState& state, double eval_loss) override;

 private:
  int64_t patience_;
  double threshold_;
  BestMetric metric_;
};

}  // namespace hftrain::train
