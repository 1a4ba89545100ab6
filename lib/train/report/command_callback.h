// A command callback ({command, on, background, required}) as a train::Callback: the command run
// through `sh -c` (posix_spawn) at the events it names, on rank 0, with
//   HFTRAIN_EVENT (begin, evaluate, save, end), HFTRAIN_STEP, HFTRAIN_RUN_DIR,
//   HFTRAIN_CHECKPOINT (save: the directory written; end: the final model, when there is one),
//   HFTRAIN_STATUS (end: finished, interrupted or failed),
//   HFTRAIN_METRICS (a JSON file of the event's figures: the evaluation's, or the last logged ones)
// in its environment, its output appended to <run_dir>/callbacks.log. In the background it runs
// beside training and is reaped after each step; the run's end waits for it. A failure (a non-zero
// exit or a signal) is logged with the command and its event; a required one also stops the run
// (TrainState::callback_failure: exit 1 after the usual checkpoint).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"
#include "train/callbacks.h"

namespace hftrain::train {

class CommandCallback final : public Callback {
 public:
  CommandCallback(config::CallbackSpec spec, std::filesystem::path run_dir);
  ~CommandCallback() override;  // waits for what still runs

  void on_train_begin(TrainState& state) override;
  void on_step_end(TrainState& state) override;  // reaps finished background commands
  void on_log(TrainState& state, const StepStats& stats) override;
  void on_evaluate(TrainState& state, double eval_loss) override;
  void on_save(TrainState& state, const std::filesystem::path& dir) override;
  void on_run_end(TrainState& state, const RunEnd& end) override;

 private:
  struct Running {
    pid_t pid;
    std::string event;
    int64_t step;
  };
  bool runs_on(const std::string& event) const;
  // Starts the command for `event` (with the given checkpoint and status, which may be empty).
  void start(TrainState& state, const std::string& event, const std::string& checkpoint, const std::string& status);
  // Reports a finished command's status; `wait`: blocks for each running one.
  void reap(TrainState* state, bool wait);
  void finished(TrainState* state, const Running& r, int status);

  config::CallbackSpec spec_;
  std::filesystem::path run_dir_;
  std::vector<std::pair<std::string, double>> last_figures_;  // the last logged or evaluated ones
  std::vector<Running> running_;
};

}  // namespace hftrain::train
