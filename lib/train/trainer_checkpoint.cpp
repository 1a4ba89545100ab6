// Trainer::save_checkpoint and Trainer::restore: everything the loop carries between steps, in
// the checkpoint layout of lib/ckpt (tensors in safetensors, state in JSON, a manifest last).
//
//   model.safetensors (or shards + index), model.json, tokenizer.json   the model directory
//   optimizer/index.json, optimizer/shard-*.safetensors                   optimizer state, one shard
//                                                                         file per rank that holds
//                                                                         a distinct shard
//   tensor_parallel.json                                                  tensor parallelism: where
//                                                                         each rank's optimizer
//                                                                         pieces lie
//   scheduler.json, scaler.json                                           LR plateau and fp16 loss scale
//   rng.safetensors                                                       CPU and CUDA generator states
//   data.json                                                             global sample cursor, epoch, seed
//   trainer_state.json                                                    step, tokens, best metric, ...
//   config.yaml, environment.json                                         the resolved config, versions
//   manifest.json                                                         sizes and checksums, written last
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <ctime>

#include <nlohmann/json.hpp>
#include <torch/torch.h>
#include <torch/version.h>

#include "ckpt/layout.h"
#include "ckpt/optimizer_save.h"
#include "ckpt/optimizer_shards.h"
#include "ckpt/rotation.h"
#include "ckpt/writer.h"
#include "metrics/format.h"
#include "model/weights/model_files.h"
#include "model/weights/safetensors.h"
#include "model/weights/saved_model.h"
#include "model/weights/stored_weights.h"
#include "model/decoder/tensor_parallel.h"
#include "model/weights/weight_loader.h"
#include "optim/ema.h"
#include "parallel/data_parallel/optimizer_pieces.h"
#include "peft/peft_files.h"
#include "train/state/checkpoint_fields.h"
#include "train/state/checkpoint_rng.h"
#include "train/state/environment_record.h"
#include "train/state/checkpoint_state.h"
#include "train/trainer.h"
#include "train/build/wiring.h"
#include "util/build_info.h"
#include "util/error.h"
#include "util/file_writer.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/strings.h"
#include "util/json_depth.h"

namespace hftrain::train {
namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

constexpr const char* kConfigFile = "config.yaml";
constexpr const char* kEnvironmentFile = "environment.json";
// LoRA runs: the base model the trained tensors belong to.
constexpr const char* kPeftFile = "peft.json";

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
  ckpt::CheckpointWriter writer(run_dir_, state_.step);

  // A LoRA run's checkpoint holds what trains (adapters, saved modules), also as peft's adapter
  // files; the frozen base stays where model.from names it, identified by its fingerprint.
  model::TensorList weights;
  for (auto& [name, p] : model_->parameters_by_name()) {
    if (!peft_ || p.requires_grad()) weights.emplace_back(name, p.detach());
  }
  writer.add_sharded_safetensors("model", weights, static_cast<uint64_t>(config_.checkpoint.shard_size),
                                 {{"format", "pt"}});
  for (const auto& [name, text] : model_->text_files(tokenizer_options(config_).kind, *tokenizer_)) {
    if (!peft_ || adapter_keeps(name, model_->causal_lm())) writer.add_bytes(name, text);
  }
  if (peft_) {
    writer.add_json(kPeftFile, {{"base_model", fs::absolute(peft_->base_dir).string()},
                                {"base_fingerprint", peft_->base_fingerprint}});
    writer.add_bytes(peft::kAdapterConfigFile, peft_->adapter_config().dump(2) + "\n");
    writer.add_safetensors(peft::kAdapterWeightsFile,
                           peft::adapter_tensors(model_->module(), peft_->lora, peft_->hf_parameters));
  }
  for (const auto& [name, text] : chat_template_files(config_)) writer.add_bytes(name, text);

  ckpt::adopt_optimizer_shards(writer, staged.handoff());  // the shard files the ranks staged

  std::optional<SavedPlateau> plateau;
  if (plateau_) {
    const auto& p = plateau_->state();
    plateau = SavedPlateau{p.factor, std::isfinite(p.best) ? std::optional<double>(p.best) : std::nullopt, p.num_bad,
                           p.cooldown_left};
  }
  writer.add_json(kSchedulerFile, scheduler_record(state_.step, plateau));
  const GradScaler::State sc = scaler_.state();
  writer.add_json(kScalerFile, scaler_record({scaler_.enabled(), sc.scale, sc.growth_tracker}));
  writer.add_safetensors(kRngFile, rng);

  const auto& loader = *loaders_.train;
  writer.add_json(kDataFile, data_state_record({.num_samples = static_cast<int64_t>(loader.num_samples()),
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
  writer.add_json(kTrainerStateFile, trainer_state_record(saved));
  writer.add_bytes(kConfigFile, record_.config_yaml);
  writer.add_json(kEnvironmentFile, environment_record(device_, record_.command_line, world_->size()));
  if (const auto tp_layout = parallel_->tp_layout_record()) writer.add_json(kTensorParallelFile, *tp_layout);

  const fs::path dir = writer.commit(record_.config_hash, {{"step", state_.step}});
  std::optional<int64_t> keep;
  if (config_.checkpoint.keep_best && state_.best_metric) keep = state_.best_step;
  for (const auto& gone : ckpt::rotate_checkpoints(run_dir_, config_.checkpoint.keep_last, keep)) {
    util::log::debug("checkpoint.keep_last: removed " + gone.string());
  }
  for (auto& cb : callbacks_) cb->on_save(state_, dir);
  return dir;
}

void Trainer::restore_trained(const fs::path& dir, bool allow_base_change) {
  const fs::path file = dir / kPeftFile;
  if (!fs::exists(file)) {
    throw util::CheckpointError(dir.string() + " has no " + kPeftFile + ": it was not saved by a LoRA run",
                                "resume it with peft.method=none, as it was trained");
  }
  const CheckpointFile saved(file);
  const auto fingerprint = saved.fields().string("base_fingerprint");
  if (fingerprint != peft_->base_fingerprint && !allow_base_change) {
    throw util::CheckpointError("the base model changed since " + dir.string() + " was saved: it trained on " +
                                    saved.fields().string("base_model") + ", and model.from (" +
                                    peft_->base_dir.string() + ") now holds other weights or another config",
                                "point model.from at the base the adapters were trained on, or pass --force to "
                                "continue them on this one");
  }
  load_trained(dir);
  util::log::info("resume: the trained tensors from " + dir.string() + ", the frozen base from " +
                  peft_->base_dir.string());
}

void Trainer::load_trained(const fs::path& dir) {
  std::vector<std::pair<std::string, torch::Tensor>> trained;
  for (const auto& [name, p] : model_->parameters_by_name()) {
    if (p.requires_grad()) trained.emplace_back(name, p);
  }
  model::WeightRules rules;
  rules.expected = "the adapters and saved modules of this LoRA run";
  rules.hint =
      "the checkpoint was saved with other peft.* settings (targets, rank, modules_to_save); resume with those";
  model::load_weights(trained, model::StoredWeights(dir), rules);
}

void Trainer::load_best_model() {
  if (!config_.trainer.load_best_model_at_end || !state_.best_metric || state_.best_step == state_.step) return;
  const fs::path dir = run_dir_ / ckpt::checkpoint_dir_name(state_.best_step);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw util::CheckpointError("trainer.load_best_model_at_end: the best evaluation's checkpoint " + dir.string() +
                                    " is gone",
                                "the last step's weights are in the newest checkpoint; copy the best checkpoint back "
                                "to keep it (checkpoint.keep_best never deletes it)");
  }
  parallel::PhaseScope phase(world_->monitor(), parallel::Phase::kCheckpoint);
  hold_weights_for(optim::Optimizer::Use::kCheckpoint);  // the weights a checkpoint holds
  MasterWeights::Scope masters(masters_.get());
  {
    const auto whole = parallel_->whole_model(parallel::Parallelism::Access::kLoad, state_.step);
    if (peft_) {
      load_trained(dir);
    } else {
      start_from(dir.string(), "the best checkpoint");
    }
  }
  // EMA: the average to export is the best checkpoint's, saved with its optimizer state.
  if (config_.trainer.ema.enabled) load_optimizer_state(dir);
  notify("trainer.load_best_model_at_end: the final model is step " + std::to_string(state_.best_step) + "'s (" +
         best_.name + " " + metrics::format_number(*state_.best_metric, 5) + "), from " + dir.string());
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

void Trainer::load_optimizer_state(const fs::path& dir) {
  const auto opened = ckpt::open_saved_optimizer(dir);  // its own errors name its files
  // EMA turned off since the checkpoint: its averages are left out (turned on, the optimizer
  // starts them from the loaded weights).
  const bool drop_averages = !config_.trainer.ema.enabled && parallel::has_state_key(*opened, optim::kEmaKey);
  if (drop_averages) util::log::info("resume: trainer.ema.enabled is false: the checkpoint's EMA weights are dropped");
  if (config_.trainer.ema.enabled && !parallel::has_state_key(*opened, optim::kEmaKey)) {
    util::log::info("resume: the checkpoint has no EMA weights: the average starts from the resumed weights");
  }
  const std::unique_ptr<parallel::SavedOptimizerState> kept =
      drop_averages ? parallel::without_state_key(*opened, optim::kEmaKey) : nullptr;
  const parallel::SavedOptimizerState& saved = kept ? *kept : *opened;
  try {
    std::optional<Json> tp_record;
    if (fs::exists(dir / kTensorParallelFile)) tp_record = read_json(dir / kTensorParallelFile);
    parallel_->load_optimizer_state(saved, tp_record, (dir / kTensorParallelFile).string());
  } catch (const util::CheckpointError& e) {
    // The optimizer's checks (a tensor's shape or dtype) know the state, not where it lies.
    throw util::CheckpointError(saved.source() + ": " + e.what(), e.hint());
  }
  held_for_.reset();  // the loaded state says which weights the parameters hold
}

void Trainer::restore(const fs::path& dir, bool allow_data_change) {
  // param_dtype=bf16: the weights and the optimizer state load into the fp32 masters (the bf16 copies
  // are rounded from them at the end).
  MasterWeights::Scope masters(masters_.get());
  {
    // Each rank keeps its shard of what is loaded.
    const auto whole = parallel_->whole_model(parallel::Parallelism::Access::kLoad, state_.step);
    if (peft_) {
      restore_trained(dir, allow_data_change);
    } else {
      start_from(dir.string(), "resume");
    }
  }

  // Every state file read and checked before any of it is used.
  const SavedTrainerState ts = read_trainer_state(dir);
  const SavedDataState data = read_data_state(dir);
  const std::optional<SavedPlateau> plateau = read_plateau_state(dir);
  const SavedScaler scaler = read_scaler_state(dir);
  const model::TensorList rng = rank_rng_states(read_rng_states(dir), world_->rank());

  load_optimizer_state(dir);

  if (plateau_) {
    if (!plateau) {
      throw util::CheckpointError((dir / kSchedulerFile).string() +
                                      " has no reduce_lr_on_plateau state, but scheduler.name is reduce_lr_on_plateau",
                                  "resume with the checkpoint's scheduler");
    }
    plateau_->restore({plateau->factor, plateau->best.value_or(plateau_->state().best), plateau->num_bad,
                       plateau->cooldown_left});
  }
  if (scaler_.enabled() && scaler.enabled) scaler_.load_state({scaler.scale, scaler.growth_tracker});
  if (rng.empty() && world_->rank() > 0) {
    // The saving job had fewer ranks: this one starts a fresh stream (only dropout draws from it).
    torch::manual_seed(default_stream_seed(config_, world_->tp_group_index(), ts.state.step));
  } else {
    restore_rng(rng, device_, dir / kRngFile);
  }
  // A tensor-parallel group draws alike from its default generators (the regions it computes
  // whole): the group's rank 0's, whatever rank held which state in the saving job.
  parallel_->share_default_generators();

  if (static_cast<uint64_t>(data.num_samples) != loaders_.train->num_samples() && !allow_data_change) {
    throw util::CheckpointError("the training data changed since " + dir.string() + " was saved: " +
                                    std::to_string(data.num_samples) + " samples then, " +
                                    std::to_string(loaders_.train->num_samples()) + " now",
                                "restore the data files, or pass --force to continue on the new data");
  }
  // The effective document masking (its default depends on the data): a checkpoint from before
  // it was recorded trained without.
  if (data.document_mask != loaders_.packing.document_mask && !allow_data_change) {
    const bool saved_mask = data.document_mask;
    throw util::CheckpointError(std::string("document masking was ") + (saved_mask ? "on" : "off") + " when " +
                                    dir.string() + " was saved and is " + (saved_mask ? "off" : "on") + " now",
                                std::string("resume with data.document_mask=") + (saved_mask ? "true" : "false") +
                                    ", or pass --force to change it from here on");
  }
  loaders_.train->seek(static_cast<uint64_t>(data.cursor));

  TrainState restored = ts.state;  // what the checkpoint holds; the rest stays this run's
  restored.total_steps = state_.total_steps;
  restored.data_wait_s = state_.data_wait_s;
  restored.should_stop = state_.should_stop;
  restored.last_eval_metrics = state_.last_eval_metrics;
  restored.source_tokens.assign(loaders_.datasets.train_sources.size(), 0);
  if (ts.source_tokens) {
    const auto& counts = *ts.source_tokens;
    size_t matched = 0;
    for (size_t i = 0; i < loaders_.datasets.train_sources.size(); ++i) {
      const auto it = counts.find(loaders_.datasets.train_sources[i].name);
      if (it == counts.end()) continue;
      restored.source_tokens[i] = it->second;
      ++matched;
    }
    if ((matched != counts.size() || matched != loaders_.datasets.train_sources.size()) && !allow_data_change) {
      std::string saved;
      for (const auto& [name, count] : counts) saved += (saved.empty() ? "" : ", ") + name;
      throw util::CheckpointError("the training sources changed since " + dir.string() + " was saved (it drew from: " +
                                      util::clip(saved, 300) + ")",
                                  "resume with the same data.train sources, or pass --force to continue with the new "
                                  "ones (their token counts start at 0)");
    }
  }
  state_ = std::move(restored);
  if (state_.best_metric && state_.best_metric_name != best_.name) {
    util::log::info("resume: the checkpoint ranked evaluations by " + state_.best_metric_name + ", this run by " +
                    best_.name + " (trainer.metric_for_best_model): the best so far starts over");
    state_.best_metric.reset();
    state_.early_stopping_best.reset();
    state_.early_stopping_bad = 0;
  }
  // A resume judges on from the saved window; a rollback keeps counting its bad steps in a row.
  if (ts.divergence && !rolling_back_) judge_.restore(*ts.divergence);
  // The window is the sum over all ranks; rank 0 carries it on.
  window_loss_.fill_(world_->is_main() ? ts.window_loss_sum : 0.0);
  window_targets_ = world_->is_main() ? ts.window_targets : 0;
  start_step_ = state_.step;
  if (state_.step >= total_steps_) {
    throw util::ConfigError(
        dir.string() + " is at step " + std::to_string(state_.step) + ", and this config ends training at step " +
            std::to_string(total_steps_),
        "raise trainer.max_steps (or max_epochs / max_tokens) to train on, e.g. trainer.max_steps=" +
            std::to_string(state_.step * 2));
  }
  util::log::info("resumed from " + dir.string() + " at step " + std::to_string(state_.step) + ", sample " +
                  std::to_string(loaders_.train->cursor()) + " (epoch " + std::to_string(loaders_.train->epoch()) +
                  "), no data replayed");
}

}  // namespace hftrain::train
