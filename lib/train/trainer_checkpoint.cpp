// Trainer::restore and what else loads a checkpoint back (the best one at the end, the optimizer
// state): everything the loop carries between steps, in the checkpoint layout of lib/ckpt (tensors
// in safetensors, state in JSON, a manifest last); trainer_save.cpp writes it.
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

}  // namespace

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
  if (config_.trainer.ema.enabled && config_.trainer.ema.export_final) load_optimizer_state(dir, /*resuming=*/false);
  notify("trainer.load_best_model_at_end: the final model is step " + std::to_string(state_.best_step) + "'s (" +
         best_.name + " " + metrics::format_number(*state_.best_metric, 5) + "), from " + dir.string());
}

void Trainer::load_optimizer_state(const fs::path& dir, bool resuming) {
  const auto opened = ckpt::open_saved_optimizer(dir);  // its own errors name its files
  // EMA turned off since the checkpoint: its averages are left out (turned on, the optimizer
  // starts them from the loaded weights).
  const bool drop_averages = !config_.trainer.ema.enabled && parallel::has_state_key(*opened, optim::kEmaKey);
  if (drop_averages) util::log::info("resume: trainer.ema.enabled is false: the checkpoint's EMA weights are dropped");
  if (resuming && config_.trainer.ema.enabled && !parallel::has_state_key(*opened, optim::kEmaKey)) {
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

  load_optimizer_state(dir, /*resuming=*/true);

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
