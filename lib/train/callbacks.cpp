#include "train/callbacks.h"

namespace hftrain::train {

void EarlyStopping::on_evaluate(TrainState& state, double eval_loss) {
  if (!state.early_stopping_best || eval_loss < *state.early_stopping_best - threshold_) {
    state.early_stopping_best = eval_loss;
    state.early_stopping_bad = 0;
    return;
  }
  if (++state.early_stopping_bad >= patience_) state.should_stop = true;
}

}  // namespace hftrain::train
