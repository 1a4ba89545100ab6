#include "metrics/mlflow_tracker.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "util/fs.h"
#include "util/json_file.h"
#include "util/log.h"

namespace hftrain::metrics {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

json number(double v) {
  if (std::isfinite(v)) return v;
  return std::isnan(v) ? "NaN" : v > 0 ? "Infinity" : "-Infinity";
}

double number(const json& j) {
  if (j.is_number()) return j.get<double>();
  const std::string s = j.get<std::string>();
  if (s == "Infinity") return std::numeric_limits<double>::infinity();
  if (s == "-Infinity") return -std::numeric_limits<double>::infinity();
  return std::numeric_limits<double>::quiet_NaN();
}

KeyValues pairs(const json& j) {
  KeyValues out;
  for (const auto& p : j) out.emplace_back(p.at(0).get<std::string>(), p.at(1).get<std::string>());
  return out;
}

// Params by key, the first value of each: MLflow takes a key once per run.
KeyValues first_of_each_key(const KeyValues& kv) {
  KeyValues out;
  std::set<std::string> seen;
  for (const auto& p : kv) {
    if (seen.insert(p.first).second) out.push_back(p);
  }
  return out;
}

constexpr size_t kMaxHeldMetrics = 500000;

}  // namespace

void MlflowTracker::Held::put_before(Held newer) {
  params.insert(params.end(), newer.params.begin(), newer.params.end());
  tags.insert(tags.end(), newer.tags.begin(), newer.tags.end());
  metrics.insert(metrics.end(), newer.metrics.begin(), newer.metrics.end());
  if (newer.status) status = newer.status;
}

MlflowTracker::MlflowTracker(MlflowTrackerOptions options)
    : options_(std::move(options)), shown_uri_(redact_uri(options_.tracking_uri)) {
  client_ = std::make_unique<MlflowClient>(options_.tracking_uri, options_.timeout, options_.auth);
  if (const auto saved = util::read_json_object(options_.run_dir / kMlflowRunFile)) {
    if (saved->value("tracking_uri", "") == redact_uri(client_->tracking_uri()))
      saved_run_id_ = saved->value("run_id", "");
  }
  for (auto& [k, v] : options_.params) k = mlflow_key(k);
  for (auto& [k, v] : options_.tags) k = mlflow_key(k);
  held_ = load_pending();
  pending_on_disk_ = !held_.empty();
  // A run that goes on (resume, restart) has its params; a new one sends them first (those an
  // earlier process could not send come first and win: a key is sent once).
  Held mine;
  if (saved_run_id_.empty()) mine.params = options_.params;
  mine.tags = options_.tags;
  held_.put_before(std::move(mine));
  held_.params = first_of_each_key(held_.params);
  thread_ = std::thread([this] { loop(); });
}

MlflowTracker::~MlflowTracker() { finish("KILLED", 0); }

void MlflowTracker::log(int64_t step, const std::vector<std::pair<std::string, double>>& values) {
  std::vector<NamedValue> named;
  for (const auto& [k, v] : values) named.push_back({k, v});
  on_values(step, static_cast<double>(now_ms()) / 1000.0, named);
}

void MlflowTracker::on_values(int64_t step, double wall_time, const std::vector<NamedValue>& values) {
  const auto t = static_cast<int64_t>(std::llround(wall_time * 1000.0));
  std::lock_guard<std::mutex> lock(mutex_);
  if (finished_) return;
  for (const auto& v : values) held_.metrics.push_back({mlflow_key(v.name), v.value, t, step});
  if (held_.metrics.size() > kMaxHeldMetrics) {
    // A server down for very long: the oldest go, so memory stays bounded.
    const size_t drop = held_.metrics.size() - kMaxHeldMetrics;
    held_.metrics.erase(held_.metrics.begin(), held_.metrics.begin() + static_cast<std::ptrdiff_t>(drop));
    if (!dropped_warned_) {
      util::log::warn("mlflow: more than " + std::to_string(kMaxHeldMetrics) +
                      " metrics held for an unreachable server; the oldest are dropped");
      dropped_warned_ = true;
    }
  }
  if (options_.flush_every <= 0) {
    flush_now_ = true;
    wake_.notify_all();
  }
}

void MlflowTracker::set_tags(const KeyValues& tags) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (finished_) return;
  for (const auto& [k, v] : tags) held_.tags.emplace_back(mlflow_key(k), v);
}

std::string MlflowTracker::run_id() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return run_id_;
}

bool MlflowTracker::finish(const std::string& status, double wait_seconds) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (finished_) return true;
  finished_ = true;
  held_.status = std::make_pair(status, now_ms());
  flush_now_ = true;
  wake_.notify_all();
  idle_.wait_for(lock, std::chrono::duration<double>(wait_seconds), [&] { return held_.empty() && !in_flight_; });
  stop_ = true;
  stopping_ = true;  // a send under way stops after its current request
  wake_.notify_all();
  lock.unlock();
  thread_.join();  // a request under way ends within options_.timeout
  lock.lock();
  persist(held_);
  if (!held_.empty()) {
    util::log::warn("mlflow: " + std::to_string(held_.size()) + " records could not be sent to " + shown_uri_ +
                    "; kept in " + (options_.run_dir / kMlflowPendingFile).string() +
                    " and sent by the next run in this directory (resume)");
  }
  return held_.empty();
}

void MlflowTracker::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  double backoff = 0;  // 0: the server answered last time
  while (!stop_) {
    // While failing: the back-off, or a second between tries once the run is ending (finish
    // waits). Otherwise the batch period; flush_every 0 sends at each log() (woken by it).
    const double wait = backoff > 0 ? (finished_ ? std::min(backoff, 1.0) : backoff)
                                    : (options_.flush_every > 0 ? options_.flush_every : 3600.0);
    wake_.wait_for(lock, std::chrono::duration<double>(wait),
                   [&] { return stop_ || (flush_now_ && (backoff == 0 || finished_)); });
    if (stop_) break;
    flush_now_ = false;
    if (held_.empty()) {
      idle_.notify_all();
      continue;
    }
    Held batch = std::move(held_);
    held_ = {};
    in_flight_ = true;
    lock.unlock();
    const size_t count = batch.size();
    const bool sent = send(batch);
    lock.lock();
    in_flight_ = false;
    bool write_pending = false;
    if (sent) {
      if (backoff > 0)
        util::log::info("mlflow: " + shown_uri_ + " answers again; sent " + std::to_string(count) + " held records");
      backoff = 0;
      warned_ = false;
      write_pending = pending_on_disk_;  // the file must not keep what is sent now
    } else {
      batch.put_before(std::move(held_));
      held_ = std::move(batch);
      backoff = backoff > 0 ? std::min(backoff * 2, options_.max_backoff) : options_.first_backoff;
      write_pending = true;  // a crash now loses nothing that was logged
    }
    if (write_pending) {
      // Written outside the lock: the training thread's on_values never waits for the disk.
      const Held copy = held_;
      lock.unlock();
      persist(copy);
      lock.lock();
      pending_on_disk_ = !copy.empty();
    }
    idle_.notify_all();
  }
}

bool MlflowTracker::ensure_run(Held& batch) {
  if (!run_id_.empty()) return true;
  std::string id;
  if (!saved_run_id_.empty() && client_->run_exists(saved_run_id_)) {
    id = saved_run_id_;
    client_->update_run(id, "RUNNING", 0);
    util::log::info("mlflow: going on with run " + id + " at " + shown_uri_);
  } else {
    if (!saved_run_id_.empty()) {
      util::log::warn("mlflow: run " + saved_run_id_ + " of " + (options_.run_dir / kMlflowRunFile).string() +
                      " is gone from " + shown_uri_ + "; starting a new MLflow run");
      if (!params_requeued_) batch.params.insert(batch.params.begin(), options_.params.begin(), options_.params.end());
      params_requeued_ = true;
    }
    const std::string experiment = client_->experiment_id(options_.experiment);
    id = client_->create_run(experiment, options_.run_name, now_ms(), {});
    util::log::info("mlflow: run " + id + " in experiment " + options_.experiment + " (id " + experiment + ") at " +
                    shown_uri_);
    const json saved = {
        {"tracking_uri", redact_uri(client_->tracking_uri())}, {"experiment_id", experiment}, {"run_id", id}};
    try {
      util::atomic_write_file(options_.run_dir / kMlflowRunFile, saved.dump(2) + "\n");
    } catch (const std::exception& e) {
      util::log::warn(std::string("mlflow: cannot remember the run id: ") + e.what() +
                      "; a resume will start another MLflow run");
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  run_id_ = id;
  return true;
}

bool MlflowTracker::send(Held& batch) {
  // Part by part, a request at a time, each removed from the batch once the server has it: a
  // retry resends nothing twice, and one the server refuses for good (a param whose value
  // changed) is dropped without taking the rest with it.
  auto refused = [&](const char* what, const MlflowError& e) {
    if (e.retryable()) throw e;
    util::log::warn(std::string("mlflow: the server refused ") + what + ", which are dropped: " + e.what());
  };
  auto send_pairs = [&](KeyValues& kv, size_t max, const char* what, bool params) {
    while (!kv.empty()) {
      if (stopping_) return false;
      const auto end = kv.begin() + static_cast<std::ptrdiff_t>(std::min(kv.size(), max));
      const KeyValues chunk(kv.begin(), end);
      try {
        client_->log_batch(run_id_, {}, params ? chunk : KeyValues{}, params ? KeyValues{} : chunk);
      } catch (const MlflowError& e) {
        refused(what, e);
      }
      kv.erase(kv.begin(), end);
    }
    return true;
  };
  try {
    ensure_run(batch);
    batch.params = first_of_each_key(batch.params);
    if (!send_pairs(batch.params, kMlflowMaxParams, "params", true)) return false;
    if (!send_pairs(batch.tags, kMlflowMaxTags, "tags", false)) return false;
    while (!batch.metrics.empty()) {
      if (stopping_) return false;
      const auto end =
          batch.metrics.begin() + static_cast<std::ptrdiff_t>(std::min(batch.metrics.size(), kMlflowMaxMetrics));
      try {
        client_->log_batch(run_id_, std::vector<MlflowMetric>(batch.metrics.begin(), end), {}, {});
      } catch (const MlflowError& e) {
        refused("metrics", e);
      }
      batch.metrics.erase(batch.metrics.begin(), end);
    }
    if (batch.status) {
      try {
        client_->update_run(run_id_, batch.status->first, batch.status->second);
      } catch (const MlflowError& e) {
        refused("the status", e);
      }
      batch.status.reset();
    }
    return true;
  } catch (const MlflowError& e) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!warned_) {
      util::log::warn("mlflow: " + shown_uri_ + " did not take the metrics (" + e.what() +
                      "); training goes on, and they are kept and sent again with back-off");
      warned_ = true;
    }
    return false;
  } catch (const std::exception& e) {
    // Not the server's doing (a reply of another shape, memory): never the training's end.
    util::log::warn(std::string("mlflow: ") + std::to_string(batch.size()) + " records are dropped: " + e.what());
    batch = {};
    return true;
  }
}

void MlflowTracker::persist(const Held& held) const {
  const fs::path path = options_.run_dir / kMlflowPendingFile;
  std::error_code ec;
  if (held.empty()) {
    fs::remove(path, ec);
    return;
  }
  json j = {{"params", json::array()}, {"tags", json::array()}, {"metrics", json::array()}};
  for (const auto& [k, v] : held.params) j["params"].push_back({k, v});
  for (const auto& [k, v] : held.tags) j["tags"].push_back({k, v});
  for (const auto& m : held.metrics) j["metrics"].push_back({m.key, number(m.value), m.timestamp_ms, m.step});
  if (held.status) j["status"] = {held.status->first, held.status->second};
  try {
    util::atomic_write_file(path, j.dump() + "\n");
  } catch (const std::exception& e) {
    util::log::warn(std::string("mlflow: cannot keep the unsent records: ") + e.what());
  }
}

MlflowTracker::Held MlflowTracker::load_pending() const {
  Held held;
  const fs::path path = options_.run_dir / kMlflowPendingFile;
  const auto j = util::read_json_object(path);
  if (!j) return held;
  try {
    held.params = pairs(j->value("params", json::array()));
    held.tags = pairs(j->value("tags", json::array()));
    for (const auto& m : j->value("metrics", json::array())) {
      held.metrics.push_back(
          {m.at(0).get<std::string>(), number(m.at(1)), m.at(2).get<int64_t>(), m.at(3).get<int64_t>()});
    }
    // The earlier process's end status is history: this process sets its own.
  } catch (const json::exception& e) {
    util::log::warn("mlflow: " + path.string() + " is damaged (" + e.what() + "); its records are not sent");
    return {};
  }
  if (!held.empty()) {
    util::log::info("mlflow: " + std::to_string(held.size()) +
                    " records an earlier process could not send are sent first");
  }
  return held;
}

}  // namespace hftrain::metrics
