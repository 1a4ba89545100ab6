// When a checkpoint is due: the checkpoint section's rules applied to what just happened. The
// loop asks after every step; this file decides (Marian's scheduler and torchtitan's
// checkpointer keep the same cadence rules beside the saving code, not in the loop).
#pragma once

#include <cstdint>
#include <string>

#include "config/config.h"

namespace hftrain::ckpt {

// What happened in the step that just ended.
struct StepEvents {
  int64_t step = 0;           // optimizer steps done
  bool signalled = false;     // a rank saw SIGINT/SIGTERM
  bool last_step = false;     // the run's final step (or early stopping)
  bool epoch_ended = false;   // the training data wrapped during the step
  bool new_best_eval = false; // this step's evaluation beat the best so far
  bool run_dir_lost = false;  // the run directory was deleted or moved: always saved (recreated)
  bool requested = false;     // a user callback asked for a checkpoint (include/hftrain/plugin.h)
};

// Why a checkpoint is due after this step ("signal", "end of training", "every N steps", "end
// of epoch", "new best eval loss", "a callback asked"), or "" when none is.
std::string save_reason(const config::CheckpointConfig& checkpoint, const StepEvents& events);

}  // namespace hftrain::ckpt
