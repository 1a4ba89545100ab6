#include "train/report/tracking.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <variant>

#include "ckpt/layout.h"
#include "config/schema.h"
#include "util/build_info.h"
#include "util/env.h"
#include "util/host.h"

namespace hftrain::train {
namespace {

std::string absolute_text(const std::filesystem::path& p) {
  std::error_code ec;
  const auto a = std::filesystem::absolute(p, ec);
  return (ec ? p : a).lexically_normal().string();
}

}  // namespace

bool reports_to(const config::Config& config, const std::string& tracker) {
  const auto& r = config.logging.report_to;
  return std::find(r.begin(), r.end(), tracker) != r.end();
}

std::vector<std::pair<std::string, std::string>> flatten_config(const config::Config& config) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& spec : config::product_schema().keys()) {
    const config::Value v = spec.read(config, spec);
    if (std::holds_alternative<std::monostate>(v)) continue;
    out.emplace_back(spec.path, config::value_to_text(v, spec));
  }
  return out;
}

MlflowCallback::MlflowCallback(const config::Config& config, const std::filesystem::path& run_dir)
    : final_wait_(std::max(2 * config.logging.mlflow.timeout, 10.0)) {
  const auto& m = config.logging.mlflow;
  metrics::MlflowTrackerOptions o;
  o.tracking_uri = m.tracking_uri;
  o.experiment = m.experiment;
  o.run_name = m.run_name;
  o.flush_every = m.flush_every;
  o.timeout = m.timeout;
  o.run_dir = run_dir;
  o.params = flatten_config(config);
  for (auto& [k, v] : o.params) {
    if (k == "logging.mlflow.tracking_uri") v = metrics::redact_uri(v);  // no password among the params
  }
  for (const auto& [k, v] : config.run.tags) o.tags.emplace_back(k, v);
  o.tags.emplace_back("hftrain.run_dir", absolute_text(run_dir));
  o.tags.emplace_back("hftrain.version",
                      std::string(util::kBuildFlags.version) + " (" + util::kBuildFlags.revision + ")");
  o.tags.emplace_back("hftrain.host", util::host_name());
  // MLflow's own clients read these variables too.
  const auto& env = util::Environment::process();
  o.auth.bearer_token = env.get("MLFLOW_TRACKING_TOKEN").value_or("");
  o.auth.user = env.get("MLFLOW_TRACKING_USERNAME").value_or("");
  o.auth.password = env.get("MLFLOW_TRACKING_PASSWORD").value_or("");
  tracker_ = std::make_shared<metrics::MlflowTracker>(std::move(o));
}

void MlflowCallback::on_save(TrainState&, const std::filesystem::path& dir) {
  // Checkpoints only: the final model (also an on_save) is hftrain.final_model, at the run's end.
  if (ckpt::parse_checkpoint_step(dir.filename().string())) {
    tracker_->set_tags({{"hftrain.last_checkpoint", absolute_text(dir)}});
  }
}

void MlflowCallback::on_run_end(TrainState&, const RunEnd& end) {
  if (end.final_model) tracker_->set_tags({{"hftrain.final_model", absolute_text(*end.final_model)}});
  if (!end.error.empty()) tracker_->set_tags({{"hftrain.error", end.error.substr(0, 5000)}});
  const char* status = end.status == RunEnd::Status::kFinished      ? "FINISHED"
                       : end.status == RunEnd::Status::kInterrupted ? "KILLED"
                                                                    : "FAILED";
  tracker_->finish(status, final_wait_);
}

Trackers make_trackers(const config::Config& config, const std::filesystem::path& run_dir) {
  Trackers t;
  if (reports_to(config, "mlflow")) {
    auto mlflow = std::make_shared<MlflowCallback>(config, run_dir);
    t.sinks.push_back(mlflow->sink());
    t.callbacks.push_back(std::move(mlflow));
  }
  return t;
}

}  // namespace hftrain::train
