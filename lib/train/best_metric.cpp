#include "train/best_metric.h"

#include <cmath>

#include "metrics/records.h"
#include "util/error.h"

namespace hftrain::train {

BestMetric BestMetric::of(const config::TrainerConfig& trainer) {
  BestMetric m;
  m.name = trainer.metric_for_best_model.empty() ? "eval_loss" : trainer.metric_for_best_model;
  const auto ends_with = [&](const std::string& tail) {
    return m.name.size() >= tail.size() && m.name.compare(m.name.size() - tail.size(), tail.size(), tail) == 0;
  };
  // The Trainer's rule (lower for a loss), and perplexity, which hftrain logs, is a loss too.
  m.greater = trainer.greater_is_better.value_or(!ends_with("loss") && !ends_with("ppl"));
  return m;
}

double BestMetric::value(double eval_loss, const std::vector<std::pair<std::string, double>>& metrics) const {
  if (name == "eval_loss") return eval_loss;
  if (name == "eval_ppl") return metrics::perplexity(eval_loss);
  std::string known = "eval_loss, eval_ppl";
  for (const auto& [n, v] : metrics) {
    if (n == name) return v;
    known += ", " + n;
  }
  throw util::ConfigError("trainer.metric_for_best_model=" + name + " is not among this run's evaluation figures (" +
                              known + ")",
                          "set trainer.metric_for_best_model to one of them");
}

bool BestMetric::improves(double candidate, std::optional<double> best, double threshold) const {
  if (!best) return true;
  if (std::isnan(candidate)) return false;
  return greater ? candidate > *best + threshold : candidate < *best - threshold;
}

}  // namespace hftrain::train
