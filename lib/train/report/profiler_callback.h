// A window of training steps recorded by PyTorch's profiler (Kineto), for finding where a step's
// time goes: HFTRAIN_PROFILE=DIR turns it on, HFTRAIN_PROFILE_STEPS=A:B picks the optimizer steps
// (1-based, both included; default 10:12). The profiler is prepared at the start of training (the
// CUDA tracer's set-up is slow), started after step A-1 and stopped after step B, after the device
// finished its work. It writes, per rank r:
//   DIR/trace-rank<r>.json  the timeline (chrome://tracing, ui.perfetto.dev), with each operator's
//                           input shapes and dtypes
//   DIR/ops-rank<r>.tsv     per device and name (CPU operators, CUDA kernels and copies): calls,
//                           total and mean microseconds, the longest total first
// Without HFTRAIN_PROFILE nothing is installed and nothing costs.
#pragma once

#include <memory>

#include "train/callbacks.h"
#include "util/env.h"

namespace hftrain::train {

// nullptr when HFTRAIN_PROFILE is unset or empty. Throws util::ConfigError naming the variable
// when HFTRAIN_PROFILE_STEPS is not A:B with 1 <= A <= B.
std::shared_ptr<Callback> make_profiler_callback(const util::Environment& env, bool cuda, int rank);

}  // namespace hftrain::train
