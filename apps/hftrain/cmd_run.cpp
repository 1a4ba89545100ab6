// `hftrain run RECIPE [overrides]`: resolve the config, write it into the run directory, train,
// and save the final model. SIGINT/SIGTERM finish the current step, save, and exit 128+N.
#include <atomic>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>

#include "commands.h"
#include "config/emit.h"
#include "config/overrides.h"
#include "config/recipe.h"
#include "config/resolve.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/log.h"

namespace hftrain::app {
namespace {

std::atomic<int> g_stop_signal{0};  // written by the signal handler only
extern "C" void on_stop_signal(int sig) { g_stop_signal.store(sig); }

struct RunArgs {
  std::vector<std::string> args;
};

util::log::Level log_level(config::LogLevel level) {
  switch (level) {
    case config::LogLevel::kDebug: return util::log::Level::kDebug;
    case config::LogLevel::kInfo: return util::log::Level::kInfo;
    case config::LogLevel::kWarn: return util::log::Level::kWarn;
    case config::LogLevel::kError: return util::log::Level::kError;
  }
  return util::log::Level::kInfo;
}

int run(const RunArgs& a) {
  config::RecipeArgs split = config::split_recipe_args(a.args);
  if (!split.recipe) {
    throw util::UsageError("`hftrain run` needs a RECIPE before the overrides", "hftrain run quickstart trainer.max_steps=100");
  }
  const config::Schema& schema = config::product_schema();
  config::ResolveOptions options;
  options.recipe_dirs = config::shipped_recipe_dirs(util::Environment::process());
  options.recipe = config::locate_recipe(*split.recipe, options.recipe_dirs);
  options.overrides = split.overrides;
  const config::ResolvedConfig resolved = config::resolve_config(options, schema);
  const config::Config& cfg = resolved.values;
  util::log::set_level(log_level(cfg.logging.level));

  const std::filesystem::path run_dir = cfg.run.output_dir;
  config::write_resolved_config(resolved, schema, run_dir);
  util::log::set_file((run_dir / "train.log").string());
  util::log::info("run " + cfg.run.name + ": config written to " + (run_dir / "config.yaml").string());

  if (cfg.checkpoint.every_steps > 0 || cfg.checkpoint.keep_best) {
    // Say it rather than pretend: periodic checkpoints and resume are not built yet.
    util::log::warn("checkpoint.every_steps / checkpoint.keep_best: periodic checkpoints are not written yet; "
                    "only the final model is saved (" + (run_dir / "final").string() + ")");
  }
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  train::Trainer trainer(cfg, run_dir, &g_stop_signal);
  train::TrainResult result = trainer.train();
  const auto final_dir = run_dir / "final";
  trainer.save_model(final_dir, result.state);
  std::string summary = "trained " + std::to_string(result.state.step) + " steps, last loss " +
                        std::to_string(result.last_loss);
  if (result.state.best_eval_loss) summary += ", best eval loss " + std::to_string(*result.state.best_eval_loss);
  if (result.unigram_baseline) summary += " (unigram baseline " + std::to_string(*result.unigram_baseline) + ")";
  util::log::info(summary + "; model saved to " + final_dir.string());
  std::cout << "model: " << final_dir.string() << "\n";
  util::log::set_file("");
  if (result.interrupted) return 128 + result.signal;
  return util::kExitOk;
}

}  // namespace

void add_run_command(CLI::App& app, Runner& runner) {
  auto a = std::make_shared<RunArgs>();
  CLI::App* sub = app.add_subcommand("run", "Train: resolve a recipe plus overrides and run it");
  sub->add_option("args", a->args, "RECIPE (a file or a shipped recipe name), then overrides: a.b=VALUE, ~a.b, +a.b=VALUE");
  sub->callback([a, &runner] { runner = [a] { return run(*a); }; });
}

}  // namespace hftrain::app
