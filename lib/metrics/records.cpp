#include "metrics/records.h"

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

namespace hftrain::metrics {
namespace {

// ordered_json keeps "type" and "step" first, which is what a person scanning the file wants.
using Json = nlohmann::ordered_json;

Json number(double v) {
  return std::isfinite(v) ? Json(v) : Json(nullptr);
}

Json optional_number(const std::optional<double>& v) {
  return v ? number(*v) : Json(nullptr);
}

}  // namespace

double perplexity(double loss) {
  const double ppl = std::exp(loss);
  return std::isfinite(ppl) || std::isnan(loss) ? ppl : std::numeric_limits<double>::infinity();
}

std::string step_record_json(const StepMetrics& m, double wall_time, const MfuField& mfu) {
  Json j;
  j["type"] = "train";
  j["step"] = m.step;
  j["epoch"] = number(m.epoch);
  j["loss"] = number(m.loss);
  j["lr"] = number(m.lr);
  j["grad_norm"] = optional_number(m.grad_norm);
  j["tokens_seen"] = m.tokens_seen;
  j["tokens_per_s"] = number(m.tokens_per_s);
  j["step_time_ms"] = number(m.step_time_ms);
  j["data_wait_ms"] = number(m.data_wait_ms);
  j["peak_mem_mb"] = optional_number(m.peak_mem_mb);
  if (mfu.reported) j["mfu"] = optional_number(mfu.value);
  if (m.loss_scale) j["loss_scale"] = number(*m.loss_scale);
  if (m.loss_scale || m.skipped_steps > 0) j["skipped_steps"] = m.skipped_steps;
  for (const auto& [name, value] : m.extra) j[name] = number(value);
  j["time"] = number(wall_time);
  return j.dump();
}

std::string eval_record_json(const EvalMetrics& m, double wall_time) {
  Json j;
  j["type"] = "eval";
  j["step"] = m.step;
  j["epoch"] = number(m.epoch);
  j["eval_loss"] = number(m.eval_loss);
  j["eval_ppl"] = number(perplexity(m.eval_loss));
  for (const auto& [name, value] : m.extra) j[name] = number(value);
  j["time"] = number(wall_time);
  return j.dump();
}

std::vector<NamedValue> step_values(const StepMetrics& m, std::optional<double> mfu) {
  std::vector<NamedValue> v = {
      {"train/loss", m.loss},
      {"train/lr", m.lr},
      {"train/epoch", m.epoch},
      {"train/tokens_seen", static_cast<double>(m.tokens_seen)},
      {"train/tokens_per_s", m.tokens_per_s},
      {"train/step_time_ms", m.step_time_ms},
      {"train/data_wait_ms", m.data_wait_ms},
  };
  if (m.grad_norm) v.push_back({"train/grad_norm", *m.grad_norm});
  if (m.peak_mem_mb) v.push_back({"train/peak_mem_mb", *m.peak_mem_mb});
  if (mfu) v.push_back({"train/mfu", *mfu});
  if (m.loss_scale) v.push_back({"train/loss_scale", *m.loss_scale});
  if (m.loss_scale || m.skipped_steps > 0) v.push_back({"train/skipped_steps", static_cast<double>(m.skipped_steps)});
  for (const auto& [name, value] : m.extra) v.push_back({name, value});
  return v;
}

std::vector<NamedValue> eval_values(const EvalMetrics& m) {
  std::vector<NamedValue> v = {{"eval/loss", m.eval_loss}, {"eval/ppl", perplexity(m.eval_loss)}};
  for (const auto& [name, value] : m.extra) {
    // "eval_accuracy" -> "eval/accuracy"; a per-source "eval/<source>/loss" is already a tag.
    v.push_back({name.rfind("eval/", 0) == 0 ? name : "eval/" + name.substr(name.rfind('_') + 1), value});
  }
  return v;
}

}  // namespace hftrain::metrics
