// trainer.metric_for_best_model and trainer.greater_is_better: the evaluation figure that ranks
// evaluations, and which way, as the Trainer's arguments of those names. The best step, the kept
// best checkpoint (checkpoint.keep_best), early stopping and trainer.load_best_model_at_end follow it.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"

namespace hftrain::train {

struct BestMetric {
  std::string name = "eval_loss";
  bool greater = false;

  // The Trainer's default direction: lower is better for a name ending in "loss" (or "ppl", the
  // perplexity hftrain logs), higher otherwise.
  static BestMetric of(const config::TrainerConfig& trainer);

  // The figure among an evaluation's: eval_loss, eval_ppl, or one of `metrics` (what metrics.jsonl
  // logs with it). Throws util::ConfigError naming trainer.metric_for_best_model and the figures
  // this run's evaluations log when it is not one of them.
  double value(double eval_loss, const std::vector<std::pair<std::string, double>>& metrics) const;

  // Whether `candidate` is better than `best` by more than `threshold` (anything beats no best).
  bool improves(double candidate, std::optional<double> best, double threshold = 0) const;
};

}  // namespace hftrain::train
