#include "train/report/command_callback.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <nlohmann/json.hpp>

#include "metrics/records.h"
#include "util/fs.h"
#include "util/log.h"

extern char** environ;

namespace hftrain::train {
namespace {

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "was killed by signal " + std::to_string(WTERMSIG(status));
  return "ended with wait status " + std::to_string(status);
}

}  // namespace

CommandCallback::CommandCallback(config::CallbackSpec spec, std::filesystem::path run_dir)
    : spec_(std::move(spec)), run_dir_(std::move(run_dir)) {}

CommandCallback::~CommandCallback() { reap(nullptr, /*wait=*/true); }

bool CommandCallback::runs_on(const std::string& event) const {
  return std::find(spec_.on.begin(), spec_.on.end(), event) != spec_.on.end();
}

void CommandCallback::on_train_begin(TrainState& state) {
  if (runs_on("begin")) start(state, "begin", "", "");
}

void CommandCallback::on_step_end(TrainState& state) { reap(&state, /*wait=*/false); }

void CommandCallback::on_log(TrainState& /*state*/, const StepStats& stats) {
  last_figures_ = {{"loss", stats.loss}, {"lr", stats.lr}, {"grad_norm", stats.grad_norm}};
  for (const auto& extra : stats.extra) last_figures_.push_back(extra);
}

void CommandCallback::on_evaluate(TrainState& state, double eval_loss) {
  last_figures_ = {{"eval_loss", eval_loss}, {"eval_ppl", metrics::perplexity(eval_loss)}};
  for (const auto& m : state.last_eval_metrics) last_figures_.push_back(m);
  if (runs_on("evaluate")) start(state, "evaluate", "", "");
}

void CommandCallback::on_save(TrainState& state, const std::filesystem::path& dir) {
  // The final model's save is the end event's checkpoint; checkpoints are saves.
  if (dir.filename() == "final") return;
  if (runs_on("save")) start(state, "save", dir.string(), "");
}

void CommandCallback::on_run_end(TrainState& state, const RunEnd& end) {
  if (runs_on("end")) {
    const char* status = end.status == RunEnd::Status::kFinished      ? "finished"
                         : end.status == RunEnd::Status::kInterrupted ? "interrupted"
                                                                      : "failed";
    start(state, "end", end.final_model ? end.final_model->string() : "", status);
  }
  reap(&state, /*wait=*/true);  // the run's end waits for every command, so that uploads finish
}

void CommandCallback::start(TrainState& state, const std::string& event, const std::string& checkpoint,
                            const std::string& status) {
  const auto dir = run_dir_ / "callbacks";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const auto metrics_file = dir / (event + "-step" + std::to_string(state.step) + ".json");
  nlohmann::json figures = nlohmann::json::object();
  for (const auto& [name, value] : last_figures_) figures[name] = value;
  figures["step"] = state.step;
  figures["epoch"] = state.epoch;
  try {
    util::atomic_write_file(metrics_file, figures.dump() + "\n");
  } catch (const std::exception& e) {
    util::log::warn("callbacks: cannot write " + metrics_file.string() + ": " + e.what());
  }
  // The environment: this process's, then the event's facts.
  std::vector<std::string> vars;
  for (char** e = environ; *e; ++e) {
    const std::string v = *e;
    if (v.rfind("HFTRAIN_EVENT=", 0) != 0 && v.rfind("HFTRAIN_STEP=", 0) != 0 &&
        v.rfind("HFTRAIN_CHECKPOINT=", 0) != 0 && v.rfind("HFTRAIN_STATUS=", 0) != 0 &&
        v.rfind("HFTRAIN_METRICS=", 0) != 0 && v.rfind("HFTRAIN_RUN_DIR=", 0) != 0) {
      vars.push_back(v);
    }
  }
  vars.push_back("HFTRAIN_EVENT=" + event);
  vars.push_back("HFTRAIN_STEP=" + std::to_string(state.step));
  vars.push_back("HFTRAIN_RUN_DIR=" + run_dir_.string());
  vars.push_back("HFTRAIN_METRICS=" + metrics_file.string());
  if (!checkpoint.empty()) vars.push_back("HFTRAIN_CHECKPOINT=" + checkpoint);
  if (!status.empty()) vars.push_back("HFTRAIN_STATUS=" + status);
  std::vector<char*> envp;
  for (auto& v : vars) envp.push_back(v.data());
  envp.push_back(nullptr);

  const std::string log = (run_dir_ / "callbacks.log").string();
  {
    // A header line before the command's own output.
    FILE* f = std::fopen(log.c_str(), "a");
    if (f) {
      std::fprintf(f, "--- %s at step %lld: %s\n", event.c_str(), static_cast<long long>(state.step),
                   spec_.command.c_str());
      std::fclose(f);
    }
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  std::string shell = "/bin/sh", dash_c = "-c", command = spec_.command;
  char* argv[] = {shell.data(), dash_c.data(), command.data(), nullptr};
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, "/bin/sh", &actions, nullptr, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    const std::string why = "callbacks: command `" + spec_.command + "` (" + event + ", step " +
                            std::to_string(state.step) + ") could not start: " + std::strerror(rc);
    util::log::warn(why);
    if (spec_.required && state.callback_failure.empty()) {
      state.callback_failure = why;
      state.should_stop = true;
    }
    return;
  }
  running_.push_back({pid, event, state.step});
  if (!spec_.background) reap(&state, /*wait=*/true);
}

void CommandCallback::reap(TrainState* state, bool wait) {
  for (auto it = running_.begin(); it != running_.end();) {
    int status = 0;
    pid_t done = 0;
    do {
      done = ::waitpid(it->pid, &status, wait ? 0 : WNOHANG);
    } while (done < 0 && errno == EINTR);
    if (done == 0) {
      ++it;
      continue;
    }
    if (done > 0) finished(state, *it, status);
    it = running_.erase(it);
  }
}

void CommandCallback::finished(TrainState* state, const Running& r, int status) {
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  const std::string why = "callbacks: command `" + spec_.command + "` (" + r.event + ", step " +
                          std::to_string(r.step) + ") " + describe_status(status) + "; its output is in " +
                          (run_dir_ / "callbacks.log").string();
  if (!spec_.required || !state) {
    util::log::warn(why + (spec_.required ? "" : " (not required: training goes on)"));
    return;
  }
  util::log::error(why);
  if (state->callback_failure.empty()) {
    state->callback_failure = why;
    state->should_stop = true;
  }
}

}  // namespace hftrain::train
