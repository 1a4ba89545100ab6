#include "train/callbacks.h"

namespace hftrain::train {

void EarlyStopping::on_evaluate(TrainState& state, double eval_loss) {
  if (state.step == 0) return;  // trainer.eval_on_start: before any training
  const double metric = state.last_metric.value_or(eval_loss);
  if (metric_.improves(metric, state.early_stopping_best, threshold_)) {
    state.early_stopping_best = metric;
    state.early_stopping_bad = 0;
    return;
  }
  if (++state.early_stopping_bad >= patience_) state.should_stop = true;
}

}  // namespace hftrain::train
