// Trainer::save_checkpoint: the checkpoint of this step, written at once (a background save,
// checkpoint.async, is trainer_background_save.cpp's and shares the snapshot and the commit here),
// and a LoRA run's adapter directory. The layout is trainer_checkpoint.cpp's.
#include <cmath>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "ckpt/layout.h"
#include "ckpt/optimizer_save.h"
#include "ckpt/writer.h"
#include "model/weights/model_files.h"
#include "peft/peft_files.h"
#include "train/build/wiring.h"
#include "train/state/checkpoint_rng.h"
#include "train/state/checkpoint_state.h"
#include "train/state/environment_record.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/file_writer.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/strings.h"

namespace hftrain::train {
namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

// The text files an adapter directory (a LoRA run's checkpoint or final/) keeps beside peft's: the
// tokenizer, and a classifier's config.json (its labels, which peft's files do not carry; a resume
// and `export --merge` read them there).
bool adapter_keeps(const std::string& name, bool causal_lm) {
  return util::starts_with(name, "tokenizer") || (!causal_lm && name == model::kHfConfigFile);
}

}  // namespace

fs::path Trainer::save_checkpoint() {
  // The weights a checkpoint holds (schedule_free_adamw's x, whose mode the optimizer state
  // records, and the next step switches back; EMA's trained weights, the average in the state).
  hold_weights_for(optim::Optimizer::Use::kCheckpoint);
  MasterWeights::Scope masters(masters_.get());  // param_dtype=bf16: the checkpoint holds the fp32 masters
  parallel::PhaseScope phase(world_->monitor(), parallel::Phase::kCheckpoint);
  // The collective parts first, on every rank: the generator states, the logging window over all
  // ranks, and the optimizer state: each rank with a shard of its own writes it beside the
  // checkpoint (ckpt/optimizer_save.h), and rank 0's writer adopts the files.
  const model::TensorList rng = gather_rng_states(*world_, device_);
  torch::Tensor window = window_loss_.clone();
  parallel_->sum_loss(window);
  const int64_t window_targets = parallel_->sum_targets(window_targets_);
  const ckpt::StagedOptimizer staged = ckpt::stage_optimizer_shards(run_dir_, state_.step, world_->comm(), device_,
                                                                    parallel_->optimizer_pieces_to_save());
  // zero3: the units gathered one by one into host copies on rank 0, which writes them; tensor
  // parallelism: the pieces gathered whole on every rank of the group; pipeline parallelism:
  // every stage's parameters on rank 0.
  const auto whole = parallel_->whole_model(parallel::Parallelism::Access::kSave, state_.step);
  if (world_->size() == 1) return write_checkpoint(rng, window.item<double>(), window_targets, staged);

  // Rank 0 writes; every rank learns whether it worked, so that they all stop or all go on.
  std::optional<util::IoError> failure;
  fs::path dir = run_dir_ / ckpt::checkpoint_dir_name(state_.step);
  if (world_->is_main()) {
    try {
      dir = write_checkpoint(rng, window.item<double>(), window_targets, staged);
    } catch (const util::IoError& e) {
      failure = e;
    }
  }
  if (reduce_over_ranks(failure ? 1 : 0, parallel::ReduceOp::kMax) != 0) {
    if (failure) throw *failure;
    throw util::IoError("rank 0 could not write the checkpoint of step " + std::to_string(state_.step),
                        "see rank 0's message (train.log)");
  }
  if (!world_->is_main()) {
    for (auto& cb : callbacks_) cb->on_save(state_, dir);
  }
  return dir;
}

fs::path Trainer::write_checkpoint(const model::TensorList& rng, double window_loss_sum, int64_t window_targets,
                                   const ckpt::StagedOptimizer& staged) {
  const CheckpointSnapshot snapshot = snapshot_checkpoint(rng, window_loss_sum, window_targets, nullptr);
  ckpt::CheckpointWriter writer(run_dir_, state_.step);
  write_model_files(writer, snapshot);
  ckpt::adopt_optimizer_shards(writer, staged.handoff());  // the shard files the ranks staged
  write_state_files(writer, snapshot);
  return commit_checkpoint(writer, snapshot, state_);
}

CheckpointSnapshot Trainer::snapshot_checkpoint(const model::TensorList& rng, double window_loss_sum,
                                                int64_t window_targets, HostCopies* copies) {
  const auto held = [&](const torch::Tensor& t) { return copies ? copies->copy(t) : t.detach(); };
  CheckpointSnapshot s;
  s.step = state_.step;
  // A LoRA run's checkpoint holds what trains (adapters, saved modules), also as peft's adapter
  // files; the frozen base stays where model.from names it, identified by its fingerprint.
  for (auto& [name, p] : model_->parameters_by_name()) {
    if (!peft_ || p.requires_grad()) s.weights.emplace_back(name, held(p));
  }
  s.shard_size = static_cast<uint64_t>(config_.checkpoint.shard_size);
  for (const auto& [name, text] : model_->text_files(tokenizer_options(config_).kind, *tokenizer_)) {
    if (!peft_ || adapter_keeps(name, model_->causal_lm())) s.text_files.emplace_back(name, text);
  }
  if (peft_) {
    s.peft_record = Json{{"base_model", fs::absolute(peft_->base_dir).string()},
                         {"base_fingerprint", peft_->base_fingerprint}};
    s.adapter_config = peft_->adapter_config().dump(2) + "\n";
    for (auto& [name, t] : peft::adapter_tensors(model_->module(), peft_->lora, peft_->hf_parameters)) {
      s.adapter_tensors.emplace_back(name, held(t));
    }
  }
  for (const auto& [name, text] : chat_template_files(config_)) s.text_files.emplace_back(name, text);

  std::optional<SavedPlateau> plateau;
  if (plateau_) {
    const auto& p = plateau_->state();
    plateau = SavedPlateau{p.factor, std::isfinite(p.best) ? std::optional<double>(p.best) : std::nullopt, p.num_bad,
                           p.cooldown_left};
  }
  s.state_json_before_rng.emplace_back(kSchedulerFile, scheduler_record(state_.step, plateau));
  const GradScaler::State sc = scaler_.state();
  s.state_json_before_rng.emplace_back(kScalerFile, scaler_record({scaler_.enabled(), sc.scale, sc.growth_tracker}));
  s.rng = rng;  // gathered into fresh host tensors

  const auto& loader = *loaders_.train;
  s.state_json_after_rng.emplace_back(
      kDataFile, data_state_record({.num_samples = static_cast<int64_t>(loader.num_samples()),
                                    .cursor = static_cast<int64_t>(loader.cursor()),
                                    .document_mask = loaders_.packing.document_mask,
                                    .epoch = static_cast<int64_t>(loader.epoch()),
                                    .seed = static_cast<int64_t>(config_.run.seed),
                                    .batch_size = static_cast<int64_t>(loader.batch_size())}));
  SavedTrainerState saved;
  saved.state = state_;
  saved.window_loss_sum = window_loss_sum;
  saved.window_targets = window_targets;
  saved.state.total_steps = total_steps_;
  saved.divergence = judge_.state();
  if (!state_.source_tokens.empty()) {
    const auto& sources = loaders_.datasets.train_sources;
    saved.source_tokens.emplace();
    for (size_t i = 0; i < sources.size() && i < state_.source_tokens.size(); ++i) {
      (*saved.source_tokens)[sources[i].name] = state_.source_tokens[i];
    }
  }
  s.state_json_after_rng.emplace_back(kTrainerStateFile, trainer_state_record(saved));
  s.config_yaml = record_.config_yaml;
  s.environment = environment_record(device_, record_.command_line, world_->size());
  s.tensor_parallel = parallel_->tp_layout_record();
  s.config_hash = record_.config_hash;
  s.keep_last = config_.checkpoint.keep_last;
  if (config_.checkpoint.keep_best && state_.best_metric) s.keep_step = state_.best_step;
  return s;
}

fs::path Trainer::commit_checkpoint(ckpt::CheckpointWriter& writer, const CheckpointSnapshot& snapshot,
                                    TrainState& at_save) {
  const Committed committed = commit_snapshot(writer, snapshot, run_dir_);
  for (const auto& gone : committed.removed) util::log::debug("checkpoint.keep_last: removed " + gone.string());
  for (auto& cb : callbacks_) cb->on_save(at_save, committed.dir);
  return committed.dir;
}

void Trainer::save_adapter_dir(const fs::path& dir) const {
  // Staged beside `dir` and put in place whole, as save_model_dir does for a full model.
  const fs::path staged = dir.parent_path() / (dir.filename().string() + ".staging");
  std::error_code ec;
  fs::remove_all(staged, ec);
  fs::create_directories(staged, ec);
  if (ec) throw util::IoError("cannot create " + staged.string() + ": " + ec.message(), "check the run directory");
  peft::write_adapter_files(staged, peft_->adapter_config(),
                            peft::adapter_tensors(model_->module(), peft_->lora, peft_->hf_parameters));
  for (const auto& [name, text] : model_->text_files(tokenizer_options(config_).kind, *tokenizer_)) {
    if (adapter_keeps(name, model_->causal_lm())) util::atomic_write_file(staged / name, text);
  }
  util::publish_dir(staged, dir);
  util::fsync_dir(dir.parent_path());
}

}  // namespace hftrain::train
