// Reports a training run to an MLflow tracking server without ever holding training up: metrics
// are queued by the training thread and sent in batches by a thread of their own, every
// `flush_every` seconds. A server that is down or slow costs one warning; the tracker keeps what it
// holds and tries again with doubling back-off, sending everything in order once the server
// answers. What is still unsent when the run ends is written to <run_dir>/mlflow-pending.json and
// sent first by the next process that reports from that run directory (a resume, a restart).
//
// The MLflow run is created when the server is first reached (experiment found or created by
// name) and remembered in <run_dir>/mlflow.json, so a resumed or restarted run goes on logging to
// the same MLflow run (its status back to RUNNING) instead of starting another.
//
//   metrics::MlflowTracker tracker({.tracking_uri = "http://127.0.0.1:5000", .experiment = "hftrain",
//                                   .run_name = "gpt2", .run_dir = dir, .params = flat_config});
//   tracker.log(step, {{"train/loss", 2.31}, {"train/lr", 3e-4}});  // or as a Recorder's sink
//   tracker.finish("FINISHED", 30);
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "metrics/http_client.h"
#include "metrics/mlflow_client.h"
#include "metrics/recorder.h"

namespace hftrain::metrics {

inline constexpr const char* kMlflowRunFile = "mlflow.json";
inline constexpr const char* kMlflowPendingFile = "mlflow-pending.json";

struct MlflowTrackerOptions {
  std::string tracking_uri;
  std::string experiment = "hftrain";
  std::string run_name;
  double flush_every = 10;     // seconds between batches
  double timeout = 10;         // seconds for one request
  double first_backoff = 1;    // seconds before the first retry, doubled each time
  double max_backoff = 60;
  std::filesystem::path run_dir;
  KeyValues params;            // the flattened config: sent once, with a new MLflow run
  KeyValues tags;              // run.tags and hftrain's own; sent again when a run is resumed
  HttpAuth auth;
};

class MlflowTracker : public MetricsSink {
 public:
  // Starts the sender thread; contacts no server before it (a server that is down is no error).
  explicit MlflowTracker(MlflowTrackerOptions options);
  ~MlflowTracker() override;  // finish("KILLED", 0) unless finish was called
  MlflowTracker(const MlflowTracker&) = delete;
  MlflowTracker& operator=(const MlflowTracker&) = delete;

  // Queues metrics of `step`, stamped with the wall clock now. Never blocks on the network.
  void log(int64_t step, const std::vector<std::pair<std::string, double>>& values);
  // The Recorder's figures of a logging step or evaluation (MetricsSink), stamped `wall_time`.
  void on_values(int64_t step, double wall_time, const std::vector<NamedValue>& values) override;
  void set_tags(const KeyValues& tags);
  // Queues the run's status (FINISHED, FAILED, KILLED), waits up to `wait_seconds` for everything
  // held to be sent, stops the thread and keeps what is left in mlflow-pending.json. Returns true
  // when nothing is left. Further calls do nothing.
  bool finish(const std::string& status, double wait_seconds);

  // The MLflow run's id once the server has been reached ("" before).
  std::string run_id() const;

 private:
  struct Held {
    KeyValues params;
    KeyValues tags;
    std::vector<MlflowMetric> metrics;
    std::optional<std::pair<std::string, int64_t>> status;  // (status, end time in ms)
    bool empty() const { return params.empty() && tags.empty() && metrics.empty() && !status; }
    size_t size() const { return params.size() + tags.size() + metrics.size() + (status ? 1 : 0); }
    void put_before(Held newer);  // this batch (older) first, then `newer`
  };

  void loop();
  // Sends `batch` (creating or finding the run first). Returns false when it must be tried
  // again; parts the server refuses for good are dropped with a warning.
  bool send(Held& batch);
  bool ensure_run(Held& batch);
  void persist(const Held& held) const;
  Held load_pending() const;

  MlflowTrackerOptions options_;
  std::string shown_uri_;  // the tracking URI without credentials, for logs and mlflow.json
  std::unique_ptr<MlflowClient> client_;  // used by the sender thread only
  std::string saved_run_id_;              // from mlflow.json: the run to go on with
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable idle_;
  Held held_;
  bool in_flight_ = false;
  bool flush_now_ = false;
  bool stop_ = false;
  bool finished_ = false;
  bool warned_ = false;     // one warning for the server being unreachable, until it answers
  bool dropped_warned_ = false;
  bool pending_on_disk_ = false;  // mlflow-pending.json holds records (rewritten after the next send)
  bool params_requeued_ = false;
  std::atomic<bool> stopping_{false};  // finish() gave up waiting: the send stops after its request
  std::string run_id_;
  std::thread thread_;
};

}  // namespace hftrain::metrics
