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
#include "train_job.h"
#include "train/model_from.h"
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

// --overwrite: what an earlier run left that would mix with the new one. train.log is kept (the
// new run appends to it).
void start_over(const fs::path& run_dir) {
  std::vector<fs::path> doomed;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(run_dir, ec)) {
    const std::string name = e.path().filename().string();
    if (ckpt::parse_checkpoint_step(name) || name.rfind(".tmp-checkpoint-", 0) == 0 || name == ckpt::kLatestFile ||
        name == "final" || name == "metrics.jsonl" || name.find("tfevents") != std::string::npos) {
      doomed.push_back(e.path());
    }
  }
  for (const auto& p : doomed) {
    fs::remove_all(p, ec);
    if (ec) throw util::IoError("--overwrite: cannot remove " + p.string() + ": " + ec.message(), "check its permissions");
  }
  util::log::info("--overwrite: removed " + std::to_string(doomed.size()) + " entries of the earlier run in " +
                  run_dir.string());
}

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
  // One owner: refused here, before anything in the directory changes, when another run holds it.
  const std::optional<ckpt::RunDirLock> lock = lock_run_dir(run_dir, a.launch.node_rank);
  // In a multi-process job the launcher (or rank 0 under mpirun) decides about the run directory;
  // the workers only follow.
  const launch::LaunchEnv env = launch::detect_launch_env(util::Environment::process());
  const bool follower = env.launcher == launch::Launcher::kHftrain || env.rank != 0;
  const auto existing = follower && a.overwrite ? std::vector<ckpt::CheckpointEntry>{} : ckpt::list_checkpoints(run_dir);
  if (!existing.empty()) {
    if (a.resume) {
      const ckpt::LocatedCheckpoint located = ckpt::locate_checkpoint(run_dir);
      job.resume_notes = plan_resume(located, job.resolved, a.force);
      job.resume_from = located.dir;
    } else if (a.overwrite) {
      start_over(run_dir);
    } else {
      throw util::UsageError("run directory " + run_dir.string() + " already holds checkpoints (newest: " +
                                 existing.back().dir.filename().string() + ")",
                             "continue it with `hftrain resume " + run_dir.string() +
                                 "` (or add --resume), start over with --overwrite, or set run.output_dir");
    }
  } else if (a.resume) {
    job.resume_notes.push_back("--resume: no checkpoint in " + run_dir.string() + " yet; starting from step 0");
  }
  if (should_launch(a.launch)) return launch_workers(a.launch, command_line);
  return run_train_job(job);
}

}  // namespace

void add_run_command(CLI::App& app, Runner& runner, const std::vector<std::string>& command_line) {
  auto a = std::make_shared<RunArgs>();
  CLI::App* sub = app.add_subcommand("run", "Train: resolve a recipe plus overrides and run it");
  sub->add_option("args", a->args, "RECIPE (a file or a shipped recipe name), then overrides: a.b=VALUE, ~a.b, +a.b=VALUE");
  sub->add_flag("--resume", a->resume, "If the run directory has checkpoints, continue from the newest that verifies");
  sub->add_flag("--overwrite", a->overwrite, "If the run directory has checkpoints, delete them and start over");
  sub->add_flag("--force", a->force, "With --resume: accept config changes that alter the data order");
  add_launch_options(sub, a->launch);
  sub->callback([a, &runner, command_line] { runner = [a, command_line] { return run(*a, command_line); }; });
}

}  // namespace hftrain::app
