// `hftrain export PATH --hf DIR [--force]`: writes a model directory (a run's final/, a checkpoint,
// or a run directory) in the Hugging Face layout that transformers' from_pretrained loads.
#include <filesystem>
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>

#include "commands.h"
#include "model/hf_export.h"
#include "model/saved_model.h"
#include "util/error.h"

namespace hftrain::app {
namespace {

namespace fs = std::filesystem;

struct ExportArgs {
  std::string path;
  std::string hf_dir;
  bool force = false;
};

int export_model(const ExportArgs& a) {
  const fs::path out = a.hf_dir;
  std::error_code ec;
  if (fs::exists(out, ec) && !a.force) {
    if (!fs::is_directory(out, ec) || !fs::is_empty(out, ec)) {
      throw util::UsageError(out.string() + " already exists", "choose another --hf folder, or add --force to replace it");
    }
  }
  const model::LoadedModel loaded = model::load_model_dir(a.path);
  model::export_hf(loaded, out);
  std::cout << "exported " << loaded.dir.string() << " to " << out.string()
            << " (load it with transformers: AutoModelForCausalLM.from_pretrained(\"" << out.string() << "\"))\n";
  return util::kExitOk;
}

}  // namespace

void add_export_command(CLI::App& app, Runner& runner) {
  auto a = std::make_shared<ExportArgs>();
  CLI::App* sub = app.add_subcommand("export", "Write a model directory in the Hugging Face layout (from_pretrained loads it)");
  sub->add_option("path", a->path, "A model directory: a run's final/, a checkpoint-N/, or a run directory")->required();
  sub->add_option("--hf", a->hf_dir, "The folder to write (config.json, model.safetensors, tokenizer files)")->required();
  sub->add_flag("--force", a->force, "Replace the folder if it exists");
  sub->callback([a, &runner] { runner = [a] { return export_model(*a); }; });
}

}  // namespace hftrain::app
