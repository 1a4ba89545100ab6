// The training loop for one process on the CPU or one GPU: micro-batches accumulated with the
// loss normalised by the step's target tokens, global-norm clipping, mixed precision, the LR
// schedule, periodic evaluation, and callbacks for metrics and early stopping. No host
// synchronisation inside a step except on logging steps (fp16 needs one to skip overflowed steps).
#pragma once

#include <atomic>
#include <filesystem>
#include <memory>
#include <vector>

#include "config/config.h"
#include "data/loader.h"
#include "data/tokenizer.h"
#include "model/transformer.h"
#include "optim/optimizer.h"
#include "train/callbacks.h"

namespace hftrain::train {

struct TrainResult {
  TrainState state;
  double last_loss = 0;  // mean loss of the last logging window
  std::optional<double> unigram_baseline;  // validation loss of token frequencies alone
  bool interrupted = false;
  int signal = 0;        // the signal that interrupted training, if any
};

class Trainer {
 public:
  // Builds tokenizer, data, model and optimizer from the config (throws ConfigError/DataError
  // for bad input before any training). `stop_signal`, set by a signal handler, makes the loop
  // finish the current step and return.
  Trainer(const config::Config& config, std::filesystem::path run_dir, const std::atomic<int>* stop_signal = nullptr);
  ~Trainer();

  void add_callback(std::shared_ptr<Callback> callback) { callbacks_.push_back(std::move(callback)); }
  TrainResult train();
  // Mean loss per target token over the validation split (or trainer.eval_batches of it).
  double evaluate();
  // Saves the model and its tokenizer as a model directory (what `generate` and model.from read)
  // and tells the callbacks (on_save).
  void save_model(const std::filesystem::path& dir, TrainState& state);

  model::Transformer& model() { return model_; }
  const data::Tokenizer& tokenizer() const { return *tokenizer_; }
  const torch::Device& device() const { return device_; }
  int64_t total_steps() const { return total_steps_; }

 private:
  int64_t plan_total_steps() const;
  // Copies the weights of an hftrain model directory whose shape equals `spec`.
  void start_from(const std::string& path, const model::ModelSpec& spec);

  config::Config config_;
  std::filesystem::path run_dir_;
  const std::atomic<int>* stop_signal_;
  torch::Device device_;
  std::unique_ptr<data::Tokenizer> tokenizer_;
  data::Loaders loaders_;
  model::Transformer model_{nullptr};
  std::unique_ptr<optim::Optimizer> optimizer_;
  int64_t total_steps_ = 0;
  std::vector<std::shared_ptr<Callback>> callbacks_;
};

}  // namespace hftrain::train
