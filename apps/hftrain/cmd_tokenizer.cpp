// `hftrain tokenizer train --data PATH_OR_GLOB ... --output tokenizer.json`: trains a byte-level
// BPE tokenizer (Hugging Face tokenizer.json) on text files.
// `hftrain tokenizer encode --tokenizer FILE --text TEXT`: prints the ids of a text.
// `hftrain tokenizer render`: cmd_tokenizer_render.cpp.
#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "commands.h"
#include "tokenizer/bpe_trainer.h"
#include "data/source.h"
#include "data/tokenizer_training.h"
#include "tokenizer/tokenizer_json.h"
#include "model/weights/saved_model.h"
#include "util/error.h"

namespace hftrain::app {
namespace {
namespace fs = std::filesystem;

struct TrainArgs {
  std::vector<std::string> data;
  std::vector<std::string> exclude;
  std::string separator;
  int32_t vocab_size = 8192;
  int64_t min_frequency = 2;
  std::string output;
  bool force = false;
};

struct EncodeArgs {
  std::string tokenizer;
  std::string text;
  bool no_special = false;
};

// Refuses before the (possibly long) training, so a typo costs nothing and nothing is lost.
void check_output(const TrainArgs& a) {
  const fs::path out(a.output);
  std::error_code ec;
  const auto status = fs::symlink_status(out, ec);
  if (fs::is_directory(status)) {
    throw util::UsageError("--output " + a.output + " is a directory",
                           "name the file: " + (out / "tokenizer.json").string());
  }
  if (fs::exists(status) && !a.force) {
    throw util::UsageError("--output " + a.output + " already exists",
                           "pass --force to overwrite it");
  }
  const fs::path parent = out.parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec)) {
    throw util::UsageError(
        "--output " + a.output + ": the folder " + parent.string() + " does not exist",
        "create it first");
  }
}

int run_train(const TrainArgs& a) {
  if (a.min_frequency < 1) {
    throw util::UsageError("--min-frequency is " + std::to_string(a.min_frequency) +
                           ", it must be at least 1");
  }
  // 256 byte tokens and the two special tokens are always there; the trainer would say so too,
  // but only after reading all the data.
  if (a.vocab_size < 258) {
    throw util::UsageError("--vocab-size is " + std::to_string(a.vocab_size) +
                               ", below the 256 byte tokens plus 2 special tokens",
                           "e.g. --vocab-size 8192");
  }
  check_output(a);
  const auto start = std::chrono::steady_clock::now();
  tokenizer::BpeTrainerOptions options;
  options.vocab_size = a.vocab_size;
  options.min_frequency = a.min_frequency;
  tokenizer::BpeTrainer trainer(options);
  std::vector<data::SourceSpec> sources;
  size_t n_files = 0;
  for (const auto& path : a.data) {
    data::SourceSpec spec;
    spec.path = path;
    spec.exclude = a.exclude;
    spec.separator = a.separator;
    n_files +=
        data::expand_source(spec).size();  // also refuses a pattern that names nothing, early
    sources.push_back(std::move(spec));
  }
  std::cerr << "training a byte-level BPE tokenizer on " << n_files << " file(s)\n";
  data::add_sources(trainer, sources);
  const tokenizer::BpeTokenizer tokenizer = trainer.train();
  tokenizer::save_tokenizer_json(tokenizer, a.output);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  const auto& model = tokenizer.model();
  std::ostringstream took;
  took.precision(2);
  took << std::fixed << s;
  std::cout << "wrote " << a.output << ": vocab size " << tokenizer.vocab_size() << " (256 bytes + "
            << model.merges.size() << " merges + " << model.specials.size()
            << " special tokens), trained on " << n_files << " file(s) in " << took.str() << " s\n";
  if (tokenizer.vocab_size() < a.vocab_size) {
    std::cerr << "note: asked for --vocab-size " << a.vocab_size
              << "; no pair left occurs at least --min-frequency " << a.min_frequency
              << " times, so the vocabulary stopped at " << tokenizer.vocab_size()
              << " (more text or a lower --min-frequency gives more merges)\n";
  }
  return util::kExitOk;
}

int run_encode(const EncodeArgs& a) {
  // A model or run directory names its tokenizer.json.
  fs::path file(a.tokenizer);
  std::error_code ec;
  if (fs::is_directory(file, ec)) file = model::resolve_model_dir(file) / model::kTokenizerFile;
  const auto tokenizer = model::load_tokenizer_file(file);
  const auto ids = tokenizer->encode(a.text, /*allow_special=*/!a.no_special);
  for (size_t i = 0; i < ids.size(); ++i) std::cout << (i ? " " : "") << ids[i];
  std::cout << "\n";
  std::cerr << ids.size() << " tokens (" << a.text.size() << " bytes; vocabulary "
            << tokenizer->vocab_size() << ")\n";
  return util::kExitOk;
}

}  // namespace

void add_tokenizer_command(CLI::App& app, Runner& runner) {
  CLI::App* sub =
      app.add_subcommand("tokenizer", "Train a BPE tokenizer on text, or encode text with one");
  sub->require_subcommand(1);

  auto t = std::make_shared<TrainArgs>();
  CLI::App* train =
      sub->add_subcommand("train",
                          "Train a byte-level BPE tokenizer and write its tokenizer.json "
                          "(loads in Hugging Face tokenizers)");
  train->add_option("--data", t->data, "A text file, folder or glob (repeatable)")->required();
  train->add_option("--exclude", t->exclude,
                    "Skip files whose name or path matches this glob (repeatable)");
  train->add_option(
      "--separator", t->separator,
      "A line equal to this ends a document (fortune files: %); default: one document per file");
  train
      ->add_option("--vocab-size", t->vocab_size,
                   "Vocabulary size: 256 bytes + merges + 2 special tokens")
      ->capture_default_str();
  train->add_option("--min-frequency", t->min_frequency, "A pair seen fewer times is never merged")
      ->capture_default_str();
  train->add_option("--output", t->output, "The tokenizer.json to write")->required();
  train->add_flag("--force", t->force, "Overwrite --output if it exists");
  train->callback([t, &runner] { runner = [t] { return run_train(*t); }; });

  auto e = std::make_shared<EncodeArgs>();
  CLI::App* encode = sub->add_subcommand("encode", "Print the token ids of a text");
  encode
      ->add_option(
          "--tokenizer", e->tokenizer,
          "A tokenizer.json (Hugging Face BPE or hftrain byte), or a model or run directory")
      ->required();
  encode->add_option("--text", e->text, "The text to encode")->required();
  encode->add_flag("--no-special", e->no_special,
                   "Treat special-token text such as <|endoftext|> as plain text");
  encode->callback([e, &runner] { runner = [e] { return run_encode(*e); }; });
  add_tokenizer_render_command(*sub, runner);
}

}  // namespace hftrain::app
