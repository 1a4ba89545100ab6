// `hftrain prepare RECIPE [overrides]`: tokenizes the recipe's text into the token cache, as a run
// would first, and prints what the splits hold and how fast the text was encoded. A multi-node job
// prepares once before it starts; the next `hftrain run` maps the cache at once.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>

#include "commands.h"
#include "recipe_options.h"
#include "config/overrides.h"
#include "config/recipe.h"
#include "config/resolve.h"
#include "data/dataset.h"
#include "train/build/model_from.h"
#include "train/build/wiring.h"
#include "util/env.h"
#include "util/error.h"

namespace hftrain::app {
namespace {

int run_prepare(const std::vector<std::string>& args) {
  config::ResolveOptions options = recipe_options(args, "prepare", "hftrain prepare my-recipe.yaml data.num_workers=8");
  const config::Config cfg = train::resolve_with_model_from(options).values;
  if (cfg.model.arch == config::ModelArch::kBert) {
    std::cout << "model.arch=bert: labelled data is encoded at the start of each run; there is no token cache "
                 "to prepare\n";
    return util::kExitOk;
  }
  if (!cfg.data.cache) {
    throw util::UsageError("data.cache is false: `hftrain prepare` would tokenize and keep nothing",
                           "drop the data.cache=false override (or set data.cache=true in the recipe)");
  }
  const auto tokenizer = tokenizer::make_tokenizer(train::tokenizer_options(cfg));
  const data::Datasets sets = data::build_datasets(train::data_options(cfg).dataset, *tokenizer);
  std::cout << "train: " << sets.train->num_tokens() << " tokens\n";
  if (sets.validation) std::cout << "validation: " << sets.validation->num_tokens() << " tokens\n";
  std::cout << "token cache: " << sets.cache_hits << " hit(s), " << sets.cache_misses << " built\n";
  if (sets.cache_misses > 0) {
    const auto& t = sets.tokenized;
    char line[160];
    std::snprintf(line, sizeof(line), "tokenized: %.1f MB of text in %.3f s (%.2f MB/s, %d threads)\n",
                  static_cast<double>(t.text_bytes) / 1e6, t.seconds,
                  static_cast<double>(t.text_bytes) / 1e6 / std::max(t.seconds, 1e-9), t.threads);
    std::cout << line;
  }
  return util::kExitOk;
}

}  // namespace

void add_prepare_command(CLI::App& app, Runner& runner) {
  auto args = std::make_shared<std::vector<std::string>>();
  CLI::App* sub = app.add_subcommand(
      "prepare", "Tokenize a recipe's text into the token cache (what `run` does first), and report the speed");
  sub->add_option("args", *args, "RECIPE (a file or a shipped recipe name), then overrides: a.b=VALUE");
  sub->callback([args, &runner] { runner = [args] { return run_prepare(*args); }; });
}

}  // namespace hftrain::app
