#include "train/callbacks.h"

namespace hftrain::train {

void EarlyStopping::on_evaluate(TrainState& state, double eval_loss) {
  if (!best_ || eval_loss < *best_ - threshold_) {
    best_ = eval_loss;
    bad_ = 0;
    return;
  }
  if (++bad_ >= patience_) state.should_stop = true;
}

}  // namespace hftrain::train
