// The experiment trackers logging.report_to asks for beyond metrics.jsonl and TensorBoard (which
// the Recorder writes itself). A tracker is two things: a metrics::MetricsSink, which the Recorder
// hands every logging step's and evaluation's figures, and a Callback, which reports the run's
// life (the config at the start, checkpoints, the final model and the status at the end).
// CONTRIBUTING.md ("Adding a tracker") walks through adding one.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"
#include "metrics/mlflow_tracker.h"
#include "metrics/recorder.h"
#include "train/callbacks.h"

namespace hftrain::train {

// Whether logging.report_to names `tracker`.
bool reports_to(const config::Config& config, const std::string& tracker);

// Every config key with its value as text ("optimizer.lr" -> "0.0003"), in schema order; unset
// optional keys are left out.
std::vector<std::pair<std::string, std::string>> flatten_config(const config::Config& config);

// MLflow (logging.mlflow.*): params = the flattened config, tags = run.tags plus hftrain's
// (hftrain.run_dir, hftrain.version, hftrain.host), a tag per checkpoint saved
// (hftrain.last_checkpoint), the final model's path as hftrain.final_model, and the status at
// the end (FINISHED, KILLED after a signal, FAILED).
class MlflowCallback : public Callback {
 public:
  MlflowCallback(const config::Config& config, const std::filesystem::path& run_dir);

  std::shared_ptr<metrics::MetricsSink> sink() const { return tracker_; }
  void on_save(TrainState& state, const std::filesystem::path& dir) override;
  void on_run_end(TrainState& state, const RunEnd& end) override;

 private:
  std::shared_ptr<metrics::MlflowTracker> tracker_;
  double final_wait_;
};

// The trackers of logging.report_to other than jsonl and tensorboard, for the reporting rank:
// callbacks to add, and sinks for the Recorder.
struct Trackers {
  std::vector<std::shared_ptr<Callback>> callbacks;
  std::vector<std::shared_ptr<metrics::MetricsSink>> sinks;
};
Trackers make_trackers(const config::Config& config, const std::filesystem::path& run_dir);

}  // namespace hftrain::train
