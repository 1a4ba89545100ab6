#include <catch2/catch.hpp>

#include "ckpt/save_policy.h"

using hftrain::ckpt::save_reason;
using hftrain::ckpt::StepEvents;
using hftrain::config::CheckpointConfig;
using hftrain::config::OnSignal;

TEST_CASE("save_reason: nothing is due on an ordinary step", "[ckpt]") {
  CheckpointConfig c;
  c.at_end = true;
  CHECK(save_reason(c, {.step = 7}).empty());
  c.every_steps = 5;
  CHECK(save_reason(c, {.step = 7}).empty());
  CHECK(save_reason(c, {.step = 10}) == "every 5 steps");
}

TEST_CASE("save_reason: each rule fires only when configured", "[ckpt]") {
  CheckpointConfig c;
  c.at_end = false;
  c.on_signal = OnSignal::kExit;
  CHECK(save_reason(c, {.step = 3, .signalled = true}).empty());
  CHECK(save_reason(c, {.step = 3, .last_step = true}).empty());
  CHECK(save_reason(c, {.step = 3, .epoch_ended = true}).empty());
  CHECK(save_reason(c, {.step = 3, .new_best_eval = true}).empty());
  c.on_signal = OnSignal::kSave;
  c.at_end = true;
  c.every_epoch = true;
  c.keep_best = true;
  CHECK(save_reason(c, {.step = 3, .signalled = true}) == "signal");
  CHECK(save_reason(c, {.step = 3, .last_step = true}) == "end of training");
  CHECK(save_reason(c, {.step = 3, .epoch_ended = true}) == "end of epoch");
  CHECK(save_reason(c, {.step = 3, .new_best_eval = true}) == "new best eval loss");
}

TEST_CASE("save_reason: a signal names itself before the other reasons", "[ckpt]") {
  CheckpointConfig c;
  c.every_steps = 1;
  c.every_epoch = true;
  c.keep_best = true;
  const StepEvents all{.step = 4, .signalled = true, .last_step = true, .epoch_ended = true, .new_best_eval = true};
  CHECK(save_reason(c, all) == "signal");
  CHECK(save_reason(c, {.step = 4, .last_step = true, .epoch_ended = true}) == "end of training");
  CHECK(save_reason(c, {.step = 4, .epoch_ended = true, .new_best_eval = true}) == "every 1 steps");
}
