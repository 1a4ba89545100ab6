// `hftrain export PATH --hf DIR [--shard-size SIZE] [--force]`: writes a model directory (a run's
// final/, a checkpoint, or a run directory) in the Hugging Face layout that transformers'
// from_pretrained loads, the weights sharded above the shard size.
#include <filesystem>
#include <iostream>
#include <optional>
#include <memory>
#include <variant>

#include <CLI/CLI.hpp>

#include "commands.h"
#include "config/resolve.h"
#include "config/units.h"
#include "model/hf/hf_export.h"
#include "model/weights/saved_model.h"
#include "train/task/adapter_model.h"
#include "util/error.h"
#include "util/log.h"

namespace hftrain::app {
namespace {

namespace fs = std::filesystem;

struct ExportArgs {
  std::string path;
  std::string hf_dir;
  std::string shard_size;
  bool force = false;
  bool merge = false;
};

// A LoRA run's adapter directory that `path` names: itself, or a run directory's final/.
std::optional<fs::path> adapter_dir_of(const fs::path& path) {
  for (const fs::path& dir : {path, path / "final"}) {
    if (train::is_adapter_dir(dir)) return dir;
  }
  return std::nullopt;
}

// --shard-size, else checkpoint.shard_size of the run the model comes from (the config.yaml in a
// checkpoint, or in the run directory above final/), else its default.
int64_t shard_bytes(const ExportArgs& a, const fs::path& model_dir) {
  if (!a.shard_size.empty()) {
    const auto parsed = config::parse_size(a.shard_size);
    if (const auto* why = std::get_if<std::string>(&parsed)) {
      throw util::UsageError("--shard-size " + a.shard_size + ": " + *why,
                             "give a size such as 2GB, 500MiB or 1000000");
    }
    const int64_t bytes = std::get<int64_t>(parsed);
    if (bytes < 1) throw util::UsageError("--shard-size must be at least 1 byte", "give a size such as 2GB");
    return bytes;
  }
  std::error_code ec;
  for (const fs::path& yaml : {model_dir / "config.yaml", model_dir.parent_path() / "config.yaml"}) {
    if (!fs::exists(yaml, ec)) continue;
    try {
      config::ResolveOptions options;
      options.checkpoint_config = yaml;
      return config::resolve_config(options).values.checkpoint.shard_size;
    } catch (const util::Error& e) {
      util::log::warn("export: cannot read checkpoint.shard_size from " + yaml.string() + " (" + e.what() +
                      "); using the default shard size");
    }
    break;
  }
  return model::kDefaultHfShardBytes;
}

int export_model(const ExportArgs& a) {
  const fs::path out = a.hf_dir;
  std::error_code ec;
  if (fs::exists(out, ec) && !a.force) {
    if (!fs::is_directory(out, ec) || !fs::is_empty(out, ec)) {
      throw util::UsageError(out.string() + " already exists",
                             "choose another --hf folder, or add --force to replace it");
    }
  }
  const std::optional<fs::path> adapter = adapter_dir_of(a.path);
  if (adapter && !a.merge) {
    throw util::UsageError(
        adapter->string() + " holds LoRA adapters in peft's format (peft.PeftModel loads them as they are)",
        "add --merge to write the base model with the adapters merged into its weights");
  }
  if (!adapter && a.merge) {
    throw util::UsageError("--merge: " + a.path + " holds no LoRA adapter (adapter_config.json)",
                           "export it without --merge, or name a LoRA run's final/ or checkpoint-N/");
  }
  if (adapter && train::is_classifier_adapter(*adapter)) {
    train::write_merged_classifier(*adapter, out, static_cast<uint64_t>(shard_bytes(a, *adapter)));
    std::cout << "exported " << adapter->string() << " merged into its base to " << out.string()
              << " (load it with transformers: BertForSequenceClassification.from_pretrained(\"" << out.string()
              << "\"))\n";
    return util::kExitOk;
  }
  const model::LoadedModel loaded =
      adapter ? train::load_adapter_model(*adapter, /*merge=*/true) : model::load_model_dir(a.path);
  model::export_hf(loaded, out, shard_bytes(a, loaded.dir));
  std::cout << "exported " << loaded.dir.string() << " to " << out.string()
            << " (load it with transformers: "
            << (loaded.model->spec().score_outputs > 0 ? "AutoModelForSequenceClassification" : "AutoModelForCausalLM")
            << ".from_pretrained(\"" << out.string() << "\"))\n";
  return util::kExitOk;
}

}  // namespace

void add_export_command(CLI::App& app, Runner& runner) {
  auto a = std::make_shared<ExportArgs>();
  CLI::App* sub =
      app.add_subcommand("export", "Write a model directory in the Hugging Face layout (from_pretrained loads it)");
  sub->add_option("path", a->path, "A model directory: a run's final/, a checkpoint-N/, or a run directory")
      ->required();
  sub->add_option("--hf", a->hf_dir, "The folder to write (config.json, model.safetensors, tokenizer files)")
      ->required();
  sub->add_option("--shard-size", a->shard_size,
                  "Split the weights into safetensors shards of at most this size (e.g. 2GB) with an index; "
                  "default: the run's checkpoint.shard_size");
  sub->add_flag("--force", a->force, "Replace the folder if it exists");
  sub->add_flag(
      "--merge", a->merge,
      "For a LoRA run (peft.method=lora): merge the adapters into the base model's weights and write that model");
  sub->callback([a, &runner] { runner = [a] { return export_model(*a); }; });
}

}  // namespace hftrain::app
