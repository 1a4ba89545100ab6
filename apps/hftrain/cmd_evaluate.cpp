// `hftrain evaluate MODEL RECIPE [overrides]`: the evaluation a run makes every trainer.eval_every
// steps, once, for the model directory MODEL (a run directory's final/, a checkpoint, a Hugging Face
// directory) on the recipe's validation data: the figures printed, one per line, and with --output
// written as one JSON object (metrics.jsonl's names: eval_loss, eval_ppl, eval_accuracy, ...).
#include <cmath>
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "recipe_options.h"
#include "metrics/format.h"
#include "metrics/records.h"
#include "model/weights/saved_model.h"
#include "train/build/model_from.h"
#include "train/task/adapter_model.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/log.h"

namespace hftrain::app {
namespace {

struct EvaluateArgs {
  std::string model;
  std::vector<std::string> rest;  // RECIPE, then overrides
  std::string output;
};

int run_evaluate(const EvaluateArgs& a) {
  // hftrain's model directories and run directories (their final/) through resolve_model_dir; a
  // Hugging Face directory (config.json) as it is.
  std::filesystem::path model = a.model;
  std::error_code ec;
  if (!train::is_adapter_dir(model) && !std::filesystem::exists(model / "config.json", ec)) {
    model = model::resolve_model_dir(model);
  }
  if (train::is_adapter_dir(model)) {
    throw util::UsageError(model.string() + " holds LoRA adapters, not a whole model",
                           "evaluate them on their base with the recipe's peft settings: `hftrain evaluate BASE "
                           "RECIPE peft.method=lora peft.from=" + model.string() + "`, or merge them first with "
                           "`hftrain export`");
  }
  config::ResolveOptions options =
      recipe_options(a.rest, "evaluate", "hftrain evaluate runs/sft/final my-recipe.yaml trainer.eval_batches=50");
  // MODEL is where the weights come from; every other value is the recipe's, as a run would read it.
  options.overrides.insert(options.overrides.begin(), "model.from=" + model.string());
  const config::Config cfg = train::resolve_with_model_from(options).values;
  if (cfg.data.validation.empty() && cfg.data.validation_fraction == 0) {
    throw util::ConfigError("the recipe names no validation data (data.validation is empty)",
                            "name it in data.validation, or pass data.validation=[path/to/valid.jsonl]");
  }
  if (cfg.trainer.ema.enabled && cfg.trainer.ema.evaluate && std::filesystem::exists(model / "trainer_state.json")) {
    util::log::warn(model.string() + " is a checkpoint of a run with EMA weights (trainer.ema): this evaluates its "
                    "trained weights, while the run's evaluations measured the average, which its final/ holds");
  }
  train::Trainer trainer(cfg, std::filesystem::current_path());
  const double loss = trainer.evaluate();
  nlohmann::json out = {{"model", model.string()}, {"eval_loss", loss}, {"eval_ppl", metrics::perplexity(loss)}};
  for (const auto& [name, value] : trainer.state().last_eval_metrics) out[name] = value;
  for (const auto& [name, value] : out.items()) {
    if (value.is_number()) std::cout << name << " " << metrics::format_number(value.get<double>(), 6) << "\n";
  }
  if (!a.output.empty()) {
    util::atomic_write_file(a.output, out.dump(1) + "\n");
    std::cout << "wrote " << a.output << "\n";
  }
  return util::kExitOk;
}

}  // namespace

void add_evaluate_command(CLI::App& app, Runner& runner) {
  auto a = std::make_shared<EvaluateArgs>();
  CLI::App* sub = app.add_subcommand(
      "evaluate", "Evaluate a model directory on a recipe's validation data (the figures a run logs as eval_*)");
  sub->add_option("model", a->model, "A model directory: a run directory (its final/), a checkpoint, a HF directory")
      ->required();
  sub->add_option("args", a->rest, "RECIPE (a file or a shipped recipe name), then overrides: a.b=VALUE");
  sub->add_option("--output,-o", a->output, "Also write the figures to this JSON file");
  sub->callback([a, &runner] { runner = [a] { return run_evaluate(*a); }; });
}

}  // namespace hftrain::app
