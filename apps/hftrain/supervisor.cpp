#include "supervisor.h"

#include <signal.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <thread>

#include "ckpt/layout.h"
#include "ckpt/verify.h"
#include "launch/launch_env.h"
#include "launch/restarts.h"
#include "launch/spawner.h"
#include "metrics/format.h"
#include "train_job.h"
#include "util/env.h"
#include "util/error.h"
#include "util/log.h"
#include "util/strings.h"

namespace hftrain::app {
namespace {

namespace fs = std::filesystem;

std::atomic<int> g_wait_signal{0};
extern "C" void on_wait_signal(int sig) { g_wait_signal.store(sig); }

// Waits `seconds`, unless SIGINT/SIGTERM/SIGHUP comes first; returns that signal, or 0.
int interruptible_wait(double seconds) {
  constexpr std::array<int, 3> kSignals = {SIGINT, SIGTERM, SIGHUP};
  std::array<struct sigaction, 3> old{};
  struct sigaction sa{};
  sa.sa_handler = on_wait_signal;
  sigemptyset(&sa.sa_mask);
  g_wait_signal = 0;
  for (size_t i = 0; i < kSignals.size(); ++i) sigaction(kSignals[i], &sa, &old[i]);
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (g_wait_signal.load() == 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (size_t i = 0; i < kSignals.size(); ++i) sigaction(kSignals[i], &old[i], nullptr);
  return g_wait_signal.load();
}

// execve does not search PATH: the launcher command's first word, found as a shell would.
std::string find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const std::string path = util::Environment::process().get("PATH").value_or("/usr/local/bin:/usr/bin:/bin");
  for (const std::string& dir : util::split(path, ':')) {
    const fs::path candidate = fs::path(dir.empty() ? "." : dir) / name;
    if (access(candidate.c_str(), X_OK) == 0 && !fs::is_directory(candidate)) return candidate.string();
  }
  throw util::UsageError("--launch-with: `" + name + "` is not on PATH",
                         "give the launcher's full path, or load the module that provides it");
}

std::vector<std::string> launcher_words(const std::string& command) {
  std::vector<std::string> words;
  for (const std::string& w : util::split(command, ' ')) {
    if (!util::trim(w).empty()) words.push_back(util::trim(w));
  }
  if (words.empty())
    throw util::UsageError("--launch-with is empty", "--launch-with \"mpirun -np 8\" or --launch-with srun");
  return words;
}

// This executable by its real path: a launcher such as mpirun starts it in other processes,
// where /proc/self/exe would name mpirun itself.
std::string own_executable() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw util::IoError("cannot find this executable's path: " + ec.message(), "run hftrain by its full path");
  return exe.string();
}

// One attempt of the job: the command line with --supervised-attempt K, started the way the
// flags ask.
launch::SpawnResult run_attempt(const LaunchArgs& a, const std::vector<std::string>& command_line, int attempt,
                                const std::optional<fs::path>& from) {
  std::vector<std::string> argv = command_line;
  argv.push_back("--supervised-attempt");
  argv.push_back(std::to_string(attempt));
  if (from) argv.insert(argv.end(), {"--supervised-from", from->string()});
  const std::vector<std::pair<std::string, std::string>> env = {{"HFTRAIN_RESTART_COUNT", std::to_string(attempt)}};
  if (a.nproc_per_node > 0) return start_workers(a, argv, env);
  launch::SpawnOptions o;
  o.distributed = false;
  o.env = env;
  if (a.launch_with.empty()) {
    o.program = "/proc/self/exe";
    o.argv = argv;
  } else {
    o.argv = launcher_words(a.launch_with);
    o.program = find_program(o.argv.front());
    o.argv.push_back(own_executable());
    o.argv.insert(o.argv.end(), argv.begin() + 1, argv.end());
  }
  return launch::run_workers(o);
}

std::string seconds_text(double s) { return metrics::format_number(s, 3) + " s"; }

}  // namespace

bool should_supervise(const LaunchArgs& a) {
  if (a.supervised() || util::Environment::process().get(launch::kLauncherVar)) return false;
  if (a.max_restarts == 0 && a.launch_with.empty()) return false;
  const launch::LaunchEnv env = launch::detect_launch_env(util::Environment::process());
  if (env.distributed()) {
    throw util::UsageError(
        std::string("--max-restarts and --launch-with supervise a whole job, but this process is rank ") +
            std::to_string(env.rank) + " of a job " + launch::launcher_name(env.launcher) + " started",
        "run the supervisor outside the job step: hftrain run RECIPE --max-restarts 3 --launch-with \"" +
            std::string(env.launcher == launch::Launcher::kSlurm ? "srun" : "mpirun -np N") + "\"");
  }
  if (!a.launch_with.empty() && a.nproc_per_node > 0) {
    throw util::UsageError("--launch-with and --nproc-per-node both start the workers", "use one of them");
  }
  if (a.nproc_per_node > 0 && a.nnodes > 1) {
    throw util::UsageError("--max-restarts with --nnodes " + std::to_string(a.nnodes) +
                               ": each node's launcher would restart its own workers on its own",
                           "restart the whole job from one place: --launch-with \"srun\" (or \"mpirun -np N --hostfile "
                           "HOSTS\") under one hftrain with --max-restarts");
  }
  return true;
}

int supervise(const LaunchArgs& a, const std::vector<std::string>& command_line, const fs::path& run_dir,
              const std::vector<int>& stop_exit_codes) {
  // The supervisor's own lines (each restart and its cause) also go to the run directory; the
  // workers write train.log as always.
  struct LogFile {
    explicit LogFile(const fs::path& path) { util::log::set_file(path.string()); }
    ~LogFile() { util::log::set_file(""); }
  } log_file(run_dir / "supervisor.log");
  launch::RestartOptions policy;
  policy.max_restarts = a.max_restarts;
  policy.backoff_seconds = a.restart_backoff;
  util::log::info("supervisor: up to " + std::to_string(a.max_restarts) + " restart" +
                  (a.max_restarts == 1 ? "" : "s") + " from the newest checkpoint that verifies" +
                  (a.launch_with.empty() ? std::string() : ", the job started with `" + a.launch_with + "`"));
  std::optional<fs::path> from;  // where the next attempt resumes (the first: as its flags say)
  for (int attempt = 0;; ++attempt) {
    launch::clear_failure_records(run_dir);
    const launch::SpawnResult r = run_attempt(a, command_line, attempt, from);
    launch::AttemptEnd end;
    end.exit_code = r.exit_code;
    end.stop_requested = r.stop_requested;
    end.launcher_cause = r.failure;
    end.records = launch::read_failure_records(run_dir);
    end.stop_exit_codes = stop_exit_codes;
    const launch::AttemptVerdict v = launch::judge_attempt(end);
    if (v.finished) {
      if (attempt > 0) util::log::info("supervisor: the job finished after " + std::to_string(attempt) + " restart(s)");
      return 0;
    }
    if (!v.may_restart) {
      const std::string line = "supervisor: not restarting: " + v.why_final;
      // A stop that was asked for is no failure; its cause is the workers' exit on the signal.
      if (end.stop_requested) util::log::info(line); else util::log::error(line + "; cause: " + v.cause);
      return r.exit_code;
    }
    if (attempt >= a.max_restarts) {
      util::log::error("supervisor: giving up after " + std::to_string(attempt) + " restart(s) (--max-restarts " +
                       std::to_string(a.max_restarts) + "); the last cause: " + v.cause);
      return r.exit_code;
    }
    const int restart = attempt + 1;
    const std::optional<ckpt::ResumeChoice> choice = ckpt::newest_verified(run_dir);
    if (!choice && !ckpt::list_checkpoints(run_dir).empty()) {
      // Checkpoints that do not verify are never deleted to start over: they may be all there is.
      util::log::error("supervisor: not restarting: no checkpoint of " + run_dir.string() +
                       " verifies (see `hftrain verify " + run_dir.string() + "`); cause: " + v.cause);
      return r.exit_code;
    }
    from = choice ? std::optional<fs::path>(choice->chosen.dir) : std::nullopt;
    const double delay = launch::restart_delay(policy, restart);
    util::log::warn("supervisor: restart " + std::to_string(restart) + " of " + std::to_string(a.max_restarts) +
                    " in " + seconds_text(delay) + " from " +
                    (from ? from->filename().string() : std::string("step 0 (no checkpoint yet)")) +
                    "; cause: " + v.cause);
    if (const int sig = interruptible_wait(delay)) {
      util::log::error("supervisor: signal " + std::to_string(sig) + " while waiting to restart; stopped");
      return 128 + sig;
    }
    if (!from) remove_earlier_run(run_dir);  // what the failed attempt wrote before any checkpoint
  }
}

void note_supervised_attempt(const LaunchArgs& a) {
  if (!a.supervised()) return;
  setenv("HFTRAIN_RESTART_COUNT", std::to_string(a.attempt).c_str(), 1);
  if (a.attempt > 0) util::log::info("restart " + std::to_string(a.attempt) + ": resuming the supervised job");
}

}  // namespace hftrain::app
