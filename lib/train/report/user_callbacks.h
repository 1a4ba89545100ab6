// The user's own callbacks (`callbacks:` in the recipe), as train::Callback objects the loop calls
// like its own:
//   plugins: a shared library speaking include/hftrain/plugin.h, loaded with dlopen at the start of
//     the run (its ABI version checked), told of train begin and end, every step's end (the logged
//     figures on logging steps), evaluations and saves; what it asks (stop, save, evaluate) lands in
//     TrainState for the loop, which agrees it over the ranks (Trainer::agree_user_control);
//   commands: a shell command (sh -c, through posix_spawn) on rank 0 at the events it names, with
//     the event's facts in its environment and a JSON file of its figures, its output appended to
//     <run_dir>/callbacks.log; in the background by default (reaped after each step, waited for at
//     the run's end); a failure is logged, and stops the run when the command is required.
#pragma once

#include <filesystem>
#include <memory>
#include <vector>

#include "config/config.h"
#include "train/callbacks.h"

namespace hftrain::train {

struct UserCallbackContext {
  std::filesystem::path run_dir;
  int rank = 0;
  int world_size = 1;
};

// The callbacks this process runs: plugins on rank 0 (every rank with ranks: all), commands on
// rank 0. Throws util::ConfigError naming the plugin (its path, a missing symbol, another ABI
// version, or its own refusal) when one cannot start: nothing has been trained then.
std::vector<std::shared_ptr<Callback>> make_user_callbacks(const std::vector<config::CallbackSpec>& specs,
                                                           const UserCallbackContext& context);

}  // namespace hftrain::train
