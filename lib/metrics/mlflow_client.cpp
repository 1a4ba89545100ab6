#include "metrics/mlflow_client.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include <nlohmann/json.hpp>

namespace hftrain::metrics {
namespace {

using nlohmann::json;

json key_values(const KeyValues& kv, size_t max_value) {
  json out = json::array();
  for (const auto& [k, v] : kv) out.push_back({{"key", k}, {"value", utf8_prefix(v, max_value)}});
  return out;
}

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// MLflow's error body: {"error_code": "RESOURCE_DOES_NOT_EXIST", "message": "..."}.
std::string error_code(const HttpResponse& r) {
  const json j = json::parse(r.body, nullptr, false);
  return j.is_object() && j.contains("error_code") && j["error_code"].is_string() ? j["error_code"].get<std::string>()
                                                                                  : "";
}

json parse_reply(const HttpResponse& r, const std::string& what) {
  const json j = json::parse(r.body, nullptr, false);
  if (!j.is_object()) throw MlflowError(what + ": the server's reply is not JSON: " + r.body.substr(0, 200), true);
  return j;
}

}  // namespace

std::string mlflow_key(const std::string& key) {
  std::string out = key;
  for (char& c : out) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == '/' ||
                    c == ':' || c == ' ';
    if (!ok) c = '_';
  }
  return out;
}

std::string redact_uri(const std::string& uri) {
  const size_t scheme = uri.find("://");
  if (scheme == std::string::npos) return uri;
  const size_t host = scheme + 3;
  const size_t at = uri.find('@', host);
  const size_t slash = uri.find('/', host);
  if (at == std::string::npos || (slash != std::string::npos && at > slash)) return uri;
  return uri.substr(0, host) + "***" + uri.substr(at);
}

std::string utf8_prefix(const std::string& text, size_t max) {
  if (text.size() <= max) return text;
  size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;  // not inside a character
  return text.substr(0, n);
}

MlflowClient::MlflowClient(std::string tracking_uri, double timeout_seconds, HttpAuth auth)
    : uri_(std::move(tracking_uri)), http_(timeout_seconds, std::move(auth)) {
  while (!uri_.empty() && uri_.back() == '/') uri_.pop_back();
}

std::string MlflowClient::call(const std::string& method, const std::string& body) {
  const HttpResponse r = http_.post_json(uri_ + "/api/2.0/mlflow/" + method, body);
  if (!r.ok()) throw MlflowError(method + ": " + r.describe(), r.retryable());
  return r.body;
}

std::string MlflowClient::experiment_id(const std::string& name) {
  const HttpResponse r =
      http_.get(uri_ + "/api/2.0/mlflow/experiments/get-by-name?experiment_name=" + http_.escape(name));
  if (r.ok()) {
    const json j = parse_reply(r, "experiments/get-by-name");
    if (j.contains("experiment") && j["experiment"].contains("experiment_id")) {
      return j["experiment"]["experiment_id"].get<std::string>();
    }
    throw MlflowError("experiments/get-by-name: no experiment_id in the reply", false);
  }
  if (error_code(r) != "RESOURCE_DOES_NOT_EXIST")
    throw MlflowError("experiments/get-by-name: " + r.describe(), r.retryable());
  const json j = json::parse(call("experiments/create", dump(json{{"name", name}})), nullptr, false);
  if (!j.is_object() || !j.contains("experiment_id"))
    throw MlflowError("experiments/create: no experiment_id in the reply", false);
  return j["experiment_id"].get<std::string>();
}

std::string MlflowClient::create_run(const std::string& experiment_id, const std::string& run_name,
                                     int64_t start_time_ms, const KeyValues& tags) {
  const json body = {{"experiment_id", experiment_id},
                     {"run_name", run_name},
                     {"start_time", start_time_ms},
                     {"tags", key_values(tags, kMlflowMaxTagValue)}};
  const json j = json::parse(call("runs/create", dump(body)), nullptr, false);
  if (!j.is_object() || !j.contains("run") || !j["run"].contains("info")) {
    throw MlflowError("runs/create: no run in the reply", false);
  }
  const json& info = j["run"]["info"];
  return info.contains("run_id") ? info["run_id"].get<std::string>() : info.at("run_uuid").get<std::string>();
}

bool MlflowClient::run_exists(const std::string& run_id) {
  const HttpResponse r = http_.get(uri_ + "/api/2.0/mlflow/runs/get?run_id=" + http_.escape(run_id));
  if (r.ok()) {
    const json j = parse_reply(r, "runs/get");
    return j.value("run", json::object()).value("info", json::object()).value("lifecycle_stage", "active") == "active";
  }
  if (error_code(r) == "RESOURCE_DOES_NOT_EXIST") return false;
  throw MlflowError("runs/get: " + r.describe(), r.retryable());
}

void MlflowClient::log_batch(const std::string& run_id, const std::vector<MlflowMetric>& metrics,
                             const KeyValues& params, const KeyValues& tags) {
  json ms = json::array();
  for (const MlflowMetric& x : metrics) {
    // JSON has no NaN or infinity; MLflow's REST API takes them as strings.
    const json value = std::isfinite(x.value) ? json(x.value)
                                              : json(std::isnan(x.value) ? "NaN"
                                                     : x.value > 0       ? "Infinity"
                                                                         : "-Infinity");
    ms.push_back({{"key", x.key}, {"value", value}, {"timestamp", x.timestamp_ms}, {"step", x.step}});
  }
  const json body = {{"run_id", run_id},
                     {"metrics", ms},
                     {"params", key_values(params, kMlflowMaxParamValue)},
                     {"tags", key_values(tags, kMlflowMaxTagValue)}};
  call("runs/log-batch", dump(body));
}

void MlflowClient::update_run(const std::string& run_id, const std::string& status, int64_t end_time_ms) {
  json body = {{"run_id", run_id}, {"status", status}};
  if (end_time_ms > 0) body["end_time"] = end_time_ms;
  call("runs/update", dump(body));
}

}  // namespace hftrain::metrics
