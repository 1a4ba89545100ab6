// Trainer::evaluate and Trainer::run_evaluation: the validation loss (over each validation source,
// and overall), the best-so-far bookkeeping, the plateau schedule and the callbacks.
#include <torch/torch.h>

#include "train/evaluation.h"
#include "train/trainer.h"

namespace hftrain::train {

double Trainer::evaluate() {
  hold_weights_for(optim::Optimizer::Use::kEvaluate);  // schedule_free_adamw's x; EMA's average, when asked
  runner_->prepare();
  const int64_t labels = model_->causal_lm() ? 0 : static_cast<int64_t>(loaders_.labels.names.size());
  const std::vector<std::string>* tags = loaders_.tagging ? &loaders_.labels.names : nullptr;
  if (loaders_.validation_sources.empty()) {
    EvalResult r = train::evaluate(*model_, *loaders_.validation, config_.trainer.eval_batches, labels,
                                   autocast_precision(), *world_, device_, tags, pipeline_);
    state_.last_eval_metrics = std::move(r.metrics);
    return r.loss;
  }
  // Each validation source on its own (trainer.eval_batches of each); the overall loss is the mean
  // over all their targets, as one pass over them together would give.
  state_.last_eval_metrics.clear();
  double loss_sum = 0;
  int64_t targets = 0;
  for (auto& [name, loader] : loaders_.validation_sources) {
    EvalResult r = train::evaluate(*model_, *loader, config_.trainer.eval_batches, labels, autocast_precision(),
                                   *world_, device_, tags, pipeline_);
    state_.last_eval_metrics.emplace_back("eval/" + name + "/loss", r.loss);
    loss_sum += r.loss * static_cast<double>(r.targets);
    targets += r.targets;
  }
  return targets == 0 ? 0.0 : loss_sum / static_cast<double>(targets);
}

void Trainer::run_evaluation() {
  const double eval_loss = evaluate();
  state_.last_eval_loss = eval_loss;
  state_.last_eval_step = state_.step;
  state_.last_metric = best_.value(eval_loss, state_.last_eval_metrics);
  if (state_.step > 0) {
    if (!state_.best_eval_loss || eval_loss < *state_.best_eval_loss) state_.best_eval_loss = eval_loss;
    if (best_.improves(*state_.last_metric, state_.best_metric)) {
      state_.best_metric = state_.last_metric;
      state_.best_metric_name = best_.name;
      state_.best_step = state_.step;
    }
    if (plateau_) plateau_->observe(eval_loss);
  }
  for (auto& cb : callbacks_) cb->on_evaluate(state_, eval_loss);
}

}  // namespace hftrain::train
