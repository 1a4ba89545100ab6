// `hftrain resume PATH [overrides] [--force]`: continue a run from a checkpoint (or from the
// newest checkpoint of a run directory that verifies). The config and the data position come
// from the checkpoint; overrides are checked against the resume policy.
#include <filesystem>
#include <memory>

#include <CLI/CLI.hpp>

#include "ckpt/locate.h"
#include "commands.h"
#include "config/resolve.h"
#include "launcher.h"
#include "supervisor.h"
#include "train_job.h"
#include "util/error.h"

namespace hftrain::app {
namespace {

struct ResumeArgs {
  std::string path;
  std::vector<std::string> overrides;
  bool force = false;
  LaunchArgs launch;
};

int resume(const ResumeArgs& a, const std::vector<std::string>& command_line) {
  for (const auto& o : a.overrides) {
    if (o.find('=') == std::string::npos && o.rfind('~', 0) != 0) {
      throw util::UsageError("`" + o + "` is not an override (a.b=VALUE, ~a.b or +a.b=VALUE)",
                             "hftrain resume runs/NAME trainer.max_steps=4000");
    }
  }
  note_supervised_attempt(a.launch);
  // A restart goes on from the checkpoint its supervisor chose (the run's newest that verifies),
  // not the one first named (which rotation may have removed since).
  const ckpt::LocatedCheckpoint located = ckpt::locate_checkpoint(
      a.launch.restart_from.empty() ? std::filesystem::path(a.path) : std::filesystem::path(a.launch.restart_from));
  config::ResolveOptions options;
  options.checkpoint_config = located.dir / "config.yaml";
  // New checkpoints go next to the one resumed from, wherever the run directory has moved,
  // unless run.output_dir is overridden.
  options.overrides.push_back("run.output_dir=" + located.run_dir.string());
  options.overrides.insert(options.overrides.end(), a.overrides.begin(), a.overrides.end());

  TrainJob job;
  job.resolved = config::resolve_config(options);
  // One owner: refused here when the run is still training (or another resume holds it). A
  // supervised attempt's supervisor holds it.
  const std::filesystem::path run_dir = job.resolved.values.run.output_dir;
  const std::optional<ckpt::RunDirLock> lock =
      a.launch.supervised() ? std::nullopt : lock_run_dir(run_dir, a.launch.node_rank);
  job.command_line = command_line;
  job.force = a.force;
  job.resume_notes = plan_resume(located, job.resolved, a.force);
  job.resume_from = located.dir;
  if (should_supervise(a.launch))
    return supervise(a.launch, command_line, run_dir, stop_exit_codes(job.resolved.values));
  if (should_launch(a.launch)) return launch_workers(a.launch, command_line);
  return run_train_job(job);
}

}  // namespace

void add_resume_command(CLI::App& app, Runner& runner, const std::vector<std::string>& command_line) {
  auto a = std::make_shared<ResumeArgs>();
  CLI::App* sub = app.add_subcommand("resume", "Continue training from a checkpoint or a run directory");
  sub->add_option("path", a->path, "A checkpoint (runs/NAME/checkpoint-N) or a run directory (runs/NAME)")->required();
  sub->add_option("overrides", a->overrides,
                  "Overrides: a.b=VALUE, ~a.b, +a.b=VALUE (checked against the resume policy)");
  sub->add_flag("--force", a->force, "Accept changes that alter the data order (data, batch size, seed)");
  add_launch_options(sub, a->launch);
  sub->callback([a, &runner, command_line] { runner = [a, command_line] { return resume(*a, command_line); }; });
}

}  // namespace hftrain::app
