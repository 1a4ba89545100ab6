// `hftrain sweep RECIPE key=a,b key2=loguniform(lo,hi) [--trials N] [--seed S] [--parallel K]
// [--nproc-per-node N] [--name NAME]`: one `hftrain run` per point of the grid (or per random
// trial), each in its own run directory under <run.output_dir>/sweep-<id>/, one after another or K
// at a time; a failed point does not stop the others. At the end, and in sweep.jsonl after every
// point, a table: overrides, status, steps, final and best eval loss, tokens/s.
// `hftrain sweep --resume DIR` finishes an interrupted sweep: finished points are kept, the others
// run again with --resume (from their checkpoints). Ctrl-C stops the running points (each saves a
// checkpoint) and starts no more.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <thread>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "config/recipe.h"
#include "config/resolve.h"
#include "launch/sweep_plan.h"
#include "metrics/format.h"
#include "recipe_options.h"
#include "run_table.h"
#include "sweep_table.h"
#include "train/report/run_summary.h"
#include "util/env.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/log.h"

extern char** environ;

namespace hftrain::app {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;


struct SweepArgs {
  std::vector<std::string> args;
  int trials = 0;
  uint64_t seed = 0;
  int parallel = 1;
  int nproc_per_node = 0;
  std::string name;
  std::string resume;
  bool parallel_given = false;
};

std::atomic<int> g_signals{0};
std::atomic<int> g_first_signal{0};
extern "C" void on_sweep_signal(int sig) {
  int none = 0;
  g_first_signal.compare_exchange_strong(none, sig);
  g_signals.fetch_add(1);
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string sweep_id() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  return buf;
}

// The last "error: ..." line a point's output holds (its cause).
std::string last_error(const fs::path& log) {
  std::ifstream in(log);
  std::string line, found;
  while (std::getline(in, line)) {
    const size_t at = line.find("error: ");
    if (at != std::string::npos) found = line.substr(at + 7);
  }
  return found;
}

pid_t start_point(const std::vector<std::string>& argv, const fs::path& log,
                  const std::vector<std::pair<std::string, std::string>>& env_add) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string entry(*e);
    bool replaced = false;
    for (const auto& [k, v] : env_add) replaced = replaced || entry.rfind(k + "=", 0) == 0;
    if (!replaced) env.push_back(entry);
  }
  for (const auto& [k, v] : env_add) env.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> copy = argv;
  for (auto& a : copy) args.push_back(a.data());
  args.push_back(nullptr);
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0)
    throw util::IoError("cannot write " + log.string(), "check the sweep folder's permissions and free space");
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // no point outlives the sweep
    if (getppid() != parent) _exit(127);
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  ::close(fd);
  if (pid < 0) throw util::IoError("cannot start a sweep point: fork failed", "check the process limit (ulimit -u)");
  setpgid(pid, pid);
  return pid;
}

int run_sweep(const Sweep& s, const std::vector<bool>& resume_point) {
  const int parallel = s.parallel;
  std::vector<PointState> states(s.points.size());
  // A resumed sweep keeps its finished points as they were recorded.
  const auto recorded = recorded_rows(s.dir);
  for (size_t i = 0; i < s.points.size(); ++i) {
    const auto it = recorded.find(s.points[i].name);
    if (it == recorded.end() || it->second.value("status", "") != "finished") continue;
    states[i].status = "finished";
    states[i].exit_code = 0;
    if (it->second.contains("duration_s") && it->second["duration_s"].is_number()) {
      states[i].ended = it->second["duration_s"].get<double>();  // started stays 0: ended - started is the duration
    }
  }
  std::error_code ec;
  fs::create_directories(s.dir / "logs", ec);
  const std::string exe = fs::read_symlink("/proc/self/exe", ec).string();
  std::vector<std::pair<std::string, std::string>> env;
  if (!util::Environment::process().get("OMP_NUM_THREADS")) {
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    const unsigned per = std::max(1u, cores / static_cast<unsigned>(parallel * std::max(1, s.nproc_per_node)));
    env.emplace_back("OMP_NUM_THREADS", std::to_string(per));
  }
  struct sigaction sa{}, old_int{}, old_term{}, old_hup{};
  sa.sa_handler = on_sweep_signal;
  sigemptyset(&sa.sa_mask);
  g_signals = 0;
  g_first_signal = 0;
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  sigaction(SIGHUP, &sa, &old_hup);

  const size_t total = s.points.size();
  size_t next = 0, running = 0, done = 0;
  for (const auto& st : states) done += st.status == "finished";
  if (done > 0)
    util::log::info("sweep: " + std::to_string(done) + " of " + std::to_string(total) + " points already finished");
  int forwarded = 0;
  auto restore_handlers = [&] {
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
    sigaction(SIGHUP, &old_hup, nullptr);
  };
  try {
    while (true) {
      const int signals = g_signals.load();
      if (signals > forwarded) {
        for (auto& st : states) {
          if (st.status == "running") kill(-st.pid, signals >= 2 ? SIGKILL : SIGINT);
        }
        if (forwarded == 0)
          util::log::warn("sweep: stopping; the running points save a checkpoint (Ctrl-C again kills them)");
        forwarded = signals;
      }
      while (forwarded == 0 && running < static_cast<size_t>(parallel) && next < total) {
        const size_t i = next++;
        if (states[i].status == "finished") continue;
        const auto& p = s.points[i];
        std::vector<std::string> argv = {exe, "run", s.recipe};
        argv.insert(argv.end(), s.fixed.begin(), s.fixed.end());
        argv.insert(argv.end(), p.overrides.begin(), p.overrides.end());
        argv.push_back("run.output_dir=" + (s.dir / p.name).string());
        if (resume_point[i]) argv.push_back("--resume");
        if (s.nproc_per_node > 0) argv.insert(argv.end(), {"--nproc-per-node", std::to_string(s.nproc_per_node)});
        states[i].pid = start_point(argv, s.dir / "logs" / (p.name + ".log"), env);
        states[i].status = "running";
        states[i].started = now_seconds();
        ++running;
        util::log::info("sweep: [" + std::to_string(i + 1) + "/" + std::to_string(total) + "] " + p.name + " started" +
                        (resume_point[i] ? " (--resume)" : "") +
                        "; its output: " + (s.dir / "logs" / (p.name + ".log")).string());
        write_table(s, states);
      }
      if (running == 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      for (size_t i = 0; i < total; ++i) {
        PointState& st = states[i];
        if (st.status != "running") continue;
        int status = 0;
        if (waitpid(st.pid, &status, WNOHANG) != st.pid) continue;
        --running;
        st.ended = now_seconds();
        st.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        // A point stopped by the signal saves a checkpoint and exits 128 + the signal (or is killed).
        const bool stopped = forwarded > 0 && (st.exit_code == 128 + SIGINT || st.exit_code == 128 + SIGKILL ||
                                               st.exit_code == 128 + SIGTERM);
        st.status = st.exit_code == 0 ? "finished" : stopped ? "interrupted" : "failed";
        if (st.status == "failed") st.cause = last_error(s.dir / "logs" / (s.points[i].name + ".log"));
        if (st.status == "failed" && st.cause.empty()) st.cause = "exit " + std::to_string(st.exit_code);
        const auto rows = write_table(s, states);
        const json& r = rows[i];
        util::log::info(
            "sweep: [" + std::to_string(i + 1) + "/" + std::to_string(total) + "] " + s.points[i].name + " " +
            st.status + " (exit " + std::to_string(st.exit_code) + ") after " + duration_text(st.ended - st.started) +
            (r["best_eval_loss"].is_number() ? "; best eval loss " + number_or_dash(r["best_eval_loss"]) : "") +
            (st.cause.empty() ? "" : "; " + st.cause));
      }
    }
  } catch (...) {
    // The sweep cannot go on (a full disk, fork failing): the running points stop as on Ctrl-C,
    // each saving a checkpoint, rather than die with it.
    for (auto& st : states) {
      if (st.status == "running") kill(-st.pid, SIGINT);
    }
    for (auto& st : states) {
      if (st.status == "running") waitpid(st.pid, nullptr, 0);
    }
    restore_handlers();
    throw;
  }
  restore_handlers();
  const auto rows = write_table(s, states);
  std::cout << "sweep " << s.dir.string() << ":\n";
  print_table(rows);
  size_t finished = 0, failed = 0;
  for (const auto& st : states) finished += st.status == "finished", failed += st.status == "failed";
  std::cout << finished << " finished, " << failed << " failed, " << (total - finished - failed) << " not finished; "
            << (s.dir / kTableFile).string() << "\n";
  if (forwarded > 0) {
    std::cout << "continue with: hftrain sweep --resume " << s.dir.string() << "\n";
    return 128 + g_first_signal.load();
  }
  return failed > 0 ? util::kExitFailure : util::kExitOk;
}

int sweep(const SweepArgs& a) {
  if (a.parallel < 1) throw util::UsageError("--parallel must be at least 1", "--parallel 2");
  if (!a.resume.empty()) {
    if (!a.args.empty()) {
      throw util::UsageError("--resume takes the sweep folder alone: its recipe and points are in sweep.json",
                             "hftrain sweep --resume " + a.resume);
    }
    Sweep s = load_sweep(a.resume);
    if (a.parallel_given) s.parallel = a.parallel;
    return run_sweep(s, std::vector<bool>(s.points.size(), true));
  }
  const config::ResolveOptions base =
      recipe_options(a.args, "sweep", "hftrain sweep quickstart optimizer.lr=1e-4,3e-4 run.seed=1,2");
  const launch::SweepSpec spec = launch::parse_sweep(base.overrides, a.trials, a.seed);
  // The overrides every point shares must resolve: a mistake there would fail every point.
  config::ResolveOptions shared = base;
  shared.overrides = spec.fixed;
  const config::ResolvedConfig resolved = config::resolve_config(shared);
  Sweep s;
  s.recipe = fs::absolute(*base.recipe).string();  // --resume may run from another folder
  s.parallel = a.parallel;
  s.fixed = spec.fixed;
  s.points = launch::plan_points(spec);
  s.nproc_per_node = a.nproc_per_node;
  s.dir = fs::path(resolved.values.run.output_dir) / ("sweep-" + (a.name.empty() ? sweep_id() : a.name));
  std::error_code ec;
  if (fs::exists(s.dir, ec)) {
    throw util::UsageError(
        "the sweep folder " + s.dir.string() + " already exists",
        "continue it with `hftrain sweep --resume " + s.dir.string() + "`, or choose another --name");
  }
  fs::create_directories(s.dir, ec);
  if (ec)
    throw util::IoError("cannot create " + s.dir.string() + ": " + ec.message(),
                        "check the permissions of run.output_dir");
  save_sweep(s);
  util::log::info("sweep: " + std::to_string(s.points.size()) + " points in " + s.dir.string() + ", " +
                  std::to_string(a.parallel) + " at a time");
  return run_sweep(s, std::vector<bool>(s.points.size(), false));
}

}  // namespace

void add_sweep_command(CLI::App& app, Runner& runner) {
  auto a = std::make_shared<SweepArgs>();
  CLI::App* sub =
      app.add_subcommand("sweep", "Run a recipe over a grid or a random search of overrides, one run per point");
  sub->add_option("args", a->args,
                  "RECIPE, then overrides; key=a,b,c sweeps the values, key=uniform(lo,hi) | loguniform(lo,hi) | "
                  "randint(lo,hi) draws them (with --trials)");
  sub->add_option("--trials", a->trials, "Random search: draw this many points")->check(CLI::Range(1, 100000));
  sub->add_option("--seed", a->seed, "The random search's seed (default 0)");
  CLI::Option* parallel = sub->add_option("--parallel", a->parallel, "Run this many points at a time (default 1; "
                                           "with --resume, as the sweep began)")->check(CLI::Range(1, 1024));
  sub->add_option("--nproc-per-node", a->nproc_per_node, "Each point with hftrain's launcher and this many workers")
      ->check(CLI::Range(1, 1024));
  sub->add_option("--name", a->name, "The sweep folder's name: sweep-NAME (default: the date and time)");
  sub->add_option("--resume", a->resume, "Finish the sweep in this folder: finished points kept, the others resumed");
  sub->callback([a, parallel, &runner] {
    a->parallel_given = parallel->count() > 0;
    runner = [a] { return sweep(*a); };
  });
}

}  // namespace hftrain::app
