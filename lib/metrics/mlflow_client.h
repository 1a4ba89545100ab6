// MLflow's tracking REST API (/api/2.0/mlflow/...), the calls a training run needs: find or create
// the experiment, create a run, log a batch of metrics, params and tags (at most the server's
// limits per request, below), read a run, and set its status. Each call throws MlflowError on
// failure, saying whether trying again later may help. Text that is not UTF-8 is sent with U+FFFD
// in place of the bad bytes.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "metrics/http_client.h"

namespace hftrain::metrics {

class MlflowError : public std::runtime_error {
 public:
  MlflowError(const std::string& what, bool retryable) : std::runtime_error(what), retryable_(retryable) {}
  bool retryable() const { return retryable_; }

 private:
  bool retryable_;
};

struct MlflowMetric {
  std::string key;
  double value = 0;
  int64_t timestamp_ms = 0;
  int64_t step = 0;
};

using KeyValues = std::vector<std::pair<std::string, std::string>>;

// What one runs/log-batch request may carry.
inline constexpr size_t kMlflowMaxMetrics = 1000, kMlflowMaxParams = 100, kMlflowMaxTags = 100;
inline constexpr size_t kMlflowMaxParamValue = 6000;  // characters (MLflow >= 2.9; older servers: 500)
inline constexpr size_t kMlflowMaxTagValue = 8000;

// A key as MLflow takes it: letters, digits, and _ - . / : and space; anything else becomes '_'.
std::string mlflow_key(const std::string& key);
// A URI fit to print or store: user:password@ replaced by ***@.
std::string redact_uri(const std::string& uri);
// At most `max` bytes of `text`, cut at a UTF-8 character boundary.
std::string utf8_prefix(const std::string& text, size_t max);

class MlflowClient {
 public:
  // `tracking_uri`: http(s)://host:port[/prefix].
  MlflowClient(std::string tracking_uri, double timeout_seconds, HttpAuth auth = {});

  // The experiment's id, created when no experiment has that name.
  std::string experiment_id(const std::string& name);
  // A new run in RUNNING state; returns its id.
  std::string create_run(const std::string& experiment_id, const std::string& run_name, int64_t start_time_ms,
                         const KeyValues& tags);
  // Whether the run exists (and is not deleted).
  bool run_exists(const std::string& run_id);
  // One request: at most kMlflowMaxMetrics metrics, kMlflowMaxParams params, kMlflowMaxTags tags
  // (values cut to their limits).
  void log_batch(const std::string& run_id, const std::vector<MlflowMetric>& metrics, const KeyValues& params,
                 const KeyValues& tags);
  // status: RUNNING, FINISHED, FAILED or KILLED; end_time_ms 0 leaves it unset.
  void update_run(const std::string& run_id, const std::string& status, int64_t end_time_ms);

  const std::string& tracking_uri() const { return uri_; }

 private:
  std::string call(const std::string& method, const std::string& body);  // POST
  std::string uri_;
  HttpClient http_;
};

}  // namespace hftrain::metrics
