// `hftrain run RECIPE [overrides] [--resume | --overwrite]`: resolve the config and train. A run
// directory that already holds checkpoints is never overwritten silently: --resume continues
// from its newest checkpoint that verifies, --overwrite starts over.
#include <filesystem>
#include <memory>

#include <CLI/CLI.hpp>

#include "ckpt/layout.h"
#include "ckpt/locate.h"
#include "commands.h"
#include "recipe_options.h"
#include "config/overrides.h"
#include "config/recipe.h"
#include "config/resolve.h"
#include "launch/launch_env.h"
#include "launcher.h"
#include "supervisor.h"
#include "train_job.h"
#include "train/build/model_from.h"
#include "util/env.h"
#include "util/error.h"
#include "util/log.h"

namespace hftrain::app {
namespace {

namespace fs = std::filesystem;

struct RunArgs {
  std::vector<std::string> args;
  bool resume = false;
  bool overwrite = false;
  bool force = false;
  LaunchArgs launch;
};

int run(const RunArgs& a, const std::vector<std::string>& command_line) {
  if (a.resume && a.overwrite) {
    throw util::UsageError("--resume and --overwrite contradict each other", "pick one");
  }
  config::ResolveOptions options = recipe_options(a.args, "run", "hftrain run quickstart trainer.max_steps=100");

  TrainJob job;
  job.resolved = train::resolve_with_model_from(options);
  job.command_line = command_line;
  job.force = a.force;
  const fs::path run_dir = job.resolved.values.run.output_dir;
  note_supervised_attempt(a.launch);
  // One owner: refused here, before anything in the directory changes, when another run holds it.
  // A supervised attempt's supervisor holds it.
  const std::optional<ckpt::RunDirLock> lock =
      a.launch.supervised() ? std::nullopt : lock_run_dir(run_dir, a.launch.node_rank);
  // In a multi-process job the launcher (or rank 0 under mpirun) decides about the run directory;
  // the workers only follow. A supervisor decides for its attempts: the first does what the flags
  // say (--overwrite was done), every later one resumes.
  const launch::LaunchEnv env = launch::detect_launch_env(util::Environment::process());
  const bool follower = env.launcher == launch::Launcher::kHftrain || env.rank != 0 || a.launch.supervised();
  const bool resume = a.resume || a.launch.attempt > 0;
  const bool overwrite = a.overwrite && !a.launch.supervised();  // a supervisor started over before the first attempt
  const auto existing = follower && overwrite ? std::vector<ckpt::CheckpointEntry>{} : ckpt::list_checkpoints(run_dir);
  if (!existing.empty()) {
    if (resume) {
      // A restart goes on from the checkpoint its supervisor chose (and logged).
      const ckpt::LocatedCheckpoint located =
          ckpt::locate_checkpoint(a.launch.restart_from.empty() ? run_dir : fs::path(a.launch.restart_from));
      job.resume_notes = plan_resume(located, job.resolved, a.force);
      job.resume_from = located.dir;
    } else if (overwrite) {
      remove_earlier_run(run_dir);
    } else {
      throw util::UsageError("run directory " + run_dir.string() + " already holds checkpoints (newest: " +
                                 existing.back().dir.filename().string() + ")",
                             "continue it with `hftrain resume " + run_dir.string() +
                                 "` (or add --resume), start over with --overwrite, or set run.output_dir");
    }
  } else if (resume) {
    job.resume_notes.push_back("--resume: no checkpoint in " + run_dir.string() + " yet; starting from step 0");
  }
  if (should_supervise(a.launch))
    return supervise(a.launch, command_line, run_dir, stop_exit_codes(job.resolved.values));
  if (should_launch(a.launch)) return launch_workers(a.launch, command_line);
  return run_train_job(job);
}

}  // namespace

void add_run_command(CLI::App& app, Runner& runner, const std::vector<std::string>& command_line) {
  auto a = std::make_shared<RunArgs>();
  CLI::App* sub = app.add_subcommand("run", "Train: resolve a recipe plus overrides and run it");
  sub->add_option("args", a->args,
                  "RECIPE (a file or a shipped recipe name), then overrides: a.b=VALUE, ~a.b, +a.b=VALUE");
  sub->add_flag("--resume", a->resume, "If the run directory has checkpoints, continue from the newest that verifies");
  sub->add_flag("--overwrite", a->overwrite, "If the run directory has checkpoints, delete them and start over");
  sub->add_flag("--force", a->force, "With --resume: accept config changes that alter the data order");
  add_launch_options(sub, a->launch);
  sub->callback([a, &runner, command_line] { runner = [a, command_line] { return run(*a, command_line); }; });
}

}  // namespace hftrain::app
