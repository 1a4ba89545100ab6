// The metrics as a trainer callback: throughput on every step, and on logging steps and
// evaluations one record each to metrics.jsonl, TensorBoard, the log and the progress display.
#pragma once

#include <memory>

#include "metrics/recorder.h"
#include "metrics/throughput.h"
#include "train/callbacks.h"

namespace hftrain::train {

class MetricsCallback : public Callback {
 public:
  explicit MetricsCallback(metrics::RecorderOptions options);

  void on_train_begin(TrainState& state) override;
  void on_step_end(TrainState& state) override;
  void on_log(TrainState& state, const StepStats& stats) override;
  void on_evaluate(TrainState& state, double eval_loss) override;
  void on_message(TrainState& state, const std::string& line) override;

 private:
  metrics::Recorder recorder_;
  metrics::ThroughputTracker throughput_;
  double wait_recorded_ = 0;
};

}  // namespace hftrain::train
