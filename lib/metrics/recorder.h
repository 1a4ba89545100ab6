// The one object the training loop talks to: it fans each logging step and evaluation out to
// metrics.jsonl, TensorBoard, the text log (through util::log) and the console progress line.
// Construct it on the rank that reports (rank 0); other ranks need none.
//
//   metrics::Recorder recorder({.run_dir = dir, .total_steps = max_steps, .mfu = mfu_options});
//   metrics::ThroughputTracker throughput;
//   throughput.start(metrics::monotonic_seconds(), start_step, tokens_seen);
//   for (...) {
//     ... one optimizer step ...
//     throughput.record(metrics::monotonic_seconds(), step, tokens_seen, data_wait_s);
//     recorder.tick(throughput);  // cheap: no I/O but the live line
//     if (step % log_every == 0) {
//       recorder.log_step({.step = step, .loss = loss.item<double>(), ...});
//     }
//   }
//
// The text log file itself is the caller's: util::log::set_file(run_dir / "train.log") makes
// every line logged here land in it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "metrics/clock.h"
#include "metrics/jsonl_writer.h"
#include "metrics/mfu.h"
#include "metrics/progress.h"
#include "metrics/records.h"
#include "metrics/tb_writer.h"
#include "metrics/throughput.h"

namespace hftrain::metrics {

inline constexpr const char* kMetricsFileName = "metrics.jsonl";

// Where a tracker plugs in (MLflow: metrics/mlflow_tracker.h): each logging step's and evaluation's
// figures by name, after metrics.jsonl and the event file have them. Called on the training
// thread: an implementation queues and returns at once.
class MetricsSink {
 public:
  virtual ~MetricsSink() = default;
  virtual void on_values(int64_t step, double wall_time, const std::vector<NamedValue>& values) = 0;
};

struct RecorderOptions {
  // Where metrics.jsonl and the event file go; created when missing.
  std::filesystem::path run_dir{};
  // Optimizer steps of the whole run, for the ETA and the progress bar; 0: unknown.
  int64_t total_steps = 0;
  bool jsonl = true;        // write run_dir/metrics.jsonl (appending on resume)
  // The step training starts from: 0 for a new run, the checkpoint's step on resume. Records of
  // later steps left in metrics.jsonl by an earlier process are dropped, and the event file
  // starts with a session start at start_step + 1 so TensorBoard drops them too.
  int64_t start_step = 0;
  bool tensorboard = true;  // write run_dir/events.out.tfevents.<time>.<host>
  bool console = true;      // live progress line (terminal) or heartbeat lines (elsewhere)
  // Set on GPU runs: adds "mfu" to every step record (null when the device peak is unknown).
  // Unset on CPU runs: no "mfu" field at all.
  std::optional<MfuOptions> mfu{};
  JsonlOptions jsonl_options{};
  TbWriterOptions tensorboard_options{};
  ProgressOptions progress_options{};
  std::vector<std::shared_ptr<MetricsSink>> sinks{};
  // Clocks, replaceable in tests. Unset: unix_seconds() and monotonic_seconds() (clock.h).
  std::function<double()> wall_clock{};
  std::function<double()> monotonic_clock{};
};

class Recorder {
 public:
  // Opens the files; throws IoError naming the path when the run directory cannot be created or
  // written (before any training time is spent).
  explicit Recorder(RecorderOptions options);
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  // After every optimizer step: refreshes the live line's step, tokens/s and ETA. No file I/O.
  void tick(const ThroughputTracker& throughput);
  // A logging step: one JSONL record, one TensorBoard event, one log line. Throws IoError when a
  // file cannot be written (a full disk); what was written before stays valid.
  void log_step(const StepMetrics& m);
  // An evaluation: eval_loss and eval_ppl, same destinations.
  void log_eval(const EvalMetrics& m);
  // Any other info line (checkpoint saved, ...), printed without garbling the live line.
  void message(std::string_view line);

  // MFU of a step at `tokens_per_s`: nullopt on CPU runs or with an unknown device.
  std::optional<double> mfu(double tokens_per_s) const;

  const std::optional<JsonlWriter>& jsonl() const { return jsonl_; }
  const std::optional<TbWriter>& tensorboard() const { return tensorboard_; }

 private:
  double wall_now() const;
  double monotonic_now() const;
  void print_line(std::string_view line);

  RecorderOptions options_;
  std::optional<MfuCalculator> mfu_;
  std::optional<JsonlWriter> jsonl_;
  std::optional<TbWriter> tensorboard_;
  std::optional<ProgressDisplay> progress_;
  ProgressState progress_state_;
};

}  // namespace hftrain::metrics
