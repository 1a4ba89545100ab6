#include "ckpt/save_policy.h"

namespace hftrain::ckpt {

std::string save_reason(const config::CheckpointConfig& c, const StepEvents& e) {
  if (e.run_dir_lost) return "the run directory vanished";
  if (e.signalled && c.on_signal == config::OnSignal::kSave) return "signal";
  if (e.last_step && c.at_end) return "end of training";
  if (c.every_steps > 0 && e.step % c.every_steps == 0) return "every " + std::to_string(c.every_steps) + " steps";
  if (c.every_epoch && e.epoch_ended) return "end of epoch";
  if (c.keep_best && e.new_best_eval) return "new best eval loss";
  if (e.requested) return "a callback asked";
  return {};
}

}  // namespace hftrain::ckpt
