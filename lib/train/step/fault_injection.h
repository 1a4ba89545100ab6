// Test faults for the end-to-end tests (tests/e2e/dist_test.sh, resume_test.sh, divergence_test.sh):
// HFTRAIN_TEST_FAULT=<rank>:<step>:kill|stall|pause makes that rank SIGKILL itself, stop
// answering, or sleep 8 s and go on, after that step; <rank>:<step>:nan makes that rank's first
// trained parameter's gradient NaN in that step (before its last backward, so the reduction
// carries it to every rank); <rank>:<step>:nanweight fills that parameter itself with NaN before
// the step's forward; <rank>:<step>:spike multiplies that rank's loss of the step by 1000 (a loss
// spike, gradients and all); these three happen once per process, not again when a rolled-back run
// reaches the step. A fault written what@K (`1:3:kill@0`) happens only in attempt K of a job under
// --max-restarts (HFTRAIN_RESTART_COUNT, 0 for the first), so a restarted job can be killed
// at chosen points. Several faults are separated by commas. Read once per process; without the
// variable it does nothing.
#pragma once

#include <memory>

#include "train/step/step_hooks.h"

namespace hftrain::train {

// The faults of HFTRAIN_TEST_FAULT for `rank`, as step hooks; null without the variable.
std::shared_ptr<StepHooks> make_test_faults(int rank);

}  // namespace hftrain::train
