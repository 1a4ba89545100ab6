// Trainer's checkpoint.async: a save's collective parts and host copies on the training thread,
// its files written by a BackgroundSave (train/state/background_save.h), and the save finished
// (shards exchanged, committed, `latest` moved, callbacks told) on every rank at the same point.
#include <chrono>

#include <torch/torch.h>

#include "ckpt/layout.h"
#include "train/state/checkpoint_rng.h"
#include "train/trainer.h"
#include "util/log.h"

namespace hftrain::train {
namespace fs = std::filesystem;

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

void Trainer::save_failed(int64_t step, const util::IoError& e) {
  if (config_.checkpoint.on_save_error == config::OnSaveError::kStop) throw e;
  notify("checkpoint at step " + std::to_string(step) + " FAILED, training on " +
         "(checkpoint.on_save_error=continue): " + e.what() + (e.hint().empty() ? "" : "; " + e.hint()));
}

int64_t Trainer::background_written_through() const {
  return background_ && !background_->publishing() && background_->written() ? background_->step() : -1;
}

int64_t Trainer::background_published_through() const {
  return background_ && background_->publishing() && background_->published() ? background_->step() : -1;
}

// Called by checkpoint_if_due once the save before it has been finished: one save at a time.
void Trainer::start_background_save(const std::string& reason) {
  const auto t0 = std::chrono::steady_clock::now();
  // The same collective parts as save_checkpoint(), in the same order.
  hold_weights_for(optim::Optimizer::Use::kCheckpoint);
  MasterWeights::Scope masters(masters_.get());
  parallel::PhaseScope phase(world_->monitor(), parallel::Phase::kCheckpoint);
  const model::TensorList rng = gather_rng_states(*world_, device_);
  torch::Tensor window = window_loss_.clone();
  parallel_->sum_loss(window);
  const int64_t window_targets = parallel_->sum_targets(window_targets_);
  const parallel::LocalOptimizerState local = parallel_->optimizer_pieces_to_save();
  ckpt::OptimizerStaging staging = ckpt::open_optimizer_staging(run_dir_, state_.step, world_->comm(), device_);

  const double collective_ms = ms_since(t0);
  const auto copy_t0 = std::chrono::steady_clock::now();
  if (!host_copies_) host_copies_ = std::make_shared<HostCopies>();
  host_copies_->begin();
  BackgroundSave::Job job;
  job.run_dir = run_dir_;
  job.main = world_->is_main();
  job.staging = std::move(staging);
  job.shard = {host_copies_->copy(local.pieces), local.meta, local.file, local.num_files};
  job.shard_meta = local.meta;
  {
    const auto whole = parallel_->whole_model(parallel::Parallelism::Access::kSave, state_.step);
    const double window_sum = window.item<double>();
    if (job.main) {
      job.snapshot = snapshot_checkpoint(rng, window_sum, window_targets, host_copies_.get());
    } else {
      job.snapshot.step = state_.step;
    }
  }
  host_copies_->end();
  util::log::debug("checkpoint.async: step " + std::to_string(state_.step) + ": the collective parts took " +
                   std::to_string(static_cast<int64_t>(collective_ms)) + " ms, the host copies (" +
                   std::to_string(host_copies_->bytes()) + " B of buffers) and the records " +
                   std::to_string(static_cast<int64_t>(ms_since(copy_t0))) + " ms");
  job.copies = host_copies_;
  background_state_ = state_;
  background_reason_ = reason;
  background_ = std::make_unique<BackgroundSave>(std::move(job));
  window_stall_ms_ += ms_since(t0);
}

void Trainer::begin_background_publish() {
  if (!background_ || background_->publishing()) return;
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t step = background_->step();
  parallel::PhaseScope phase(world_->monitor(), parallel::Phase::kCheckpoint);
  BackgroundSave::Result written = background_->take();
  last_write_ms_ = written.write_ms;
  background_write_ms_ = written.write_ms;
  try {
    // Every rank learns whether every shard is in (throws on every rank alike when not).
    auto staged = std::make_shared<ckpt::StagedOptimizer>(ckpt::close_optimizer_staging(
        std::move(background_->staging()), world_->comm(), device_, written.shard_record, background_->shard_meta()));
    if (!world_->is_main() || written.error) {
      BackgroundSave::Published known;
      known.dir = run_dir_ / ckpt::checkpoint_dir_name(step);
      known.error = written.error;
      background_->published_as(std::move(known));
    } else {
      // Rank 0's adoption, commit and rotation on a thread: files only.
      std::shared_ptr<ckpt::CheckpointWriter> writer = std::move(written.writer);
      background_->publish([writer, staged, snapshot = &background_->snapshot(), run_dir = run_dir_] {
        BackgroundSave::Published out;
        try {
          ckpt::adopt_optimizer_shards(*writer, staged->handoff());
          Committed committed = commit_snapshot(*writer, *snapshot, run_dir);
          out.dir = std::move(committed.dir);
          out.removed = std::move(committed.removed);
        } catch (const util::IoError& e) {
          out.error = e;
        } catch (const std::exception& e) {
          out.error =
              util::IoError(std::string("publishing the checkpoint failed: ") + e.what(), "report this as a bug");
        }
        return out;
      });
    }
  } catch (const util::IoError& e) {
    background_.reset();
    save_failed(step, e);
  }
  window_stall_ms_ += ms_since(t0);
}

void Trainer::complete_background_save(bool waited) {
  if (!background_ || !background_->publishing()) return;
  const auto t0 = std::chrono::steady_clock::now();
  const std::unique_ptr<BackgroundSave> save = std::move(background_);
  const int64_t step = save->step();
  parallel::PhaseScope phase(world_->monitor(), parallel::Phase::kCheckpoint);
  BackgroundSave::Published published = save->take_published();
  try {
    // Every rank learns whether rank 0 published, so that they all stop or all go on.
    const std::optional<util::IoError> failure = world_->is_main() ? published.error : std::nullopt;
    if (reduce_over_ranks(failure ? 1 : 0, parallel::ReduceOp::kMax) != 0) {
      if (failure) throw *failure;
      throw util::IoError("rank 0 could not write the checkpoint of step " + std::to_string(step),
                          "see rank 0's message (train.log)");
    }
    for (const auto& gone : published.removed) util::log::debug("checkpoint.keep_last: removed " + gone.string());
    for (auto& cb : callbacks_) cb->on_save(background_state_, published.dir);
    // What the callbacks asked while told of the save, as if asked now.
    state_.should_stop = state_.should_stop || background_state_.should_stop;
    state_.should_save = state_.should_save || background_state_.should_save;
    state_.should_evaluate = state_.should_evaluate || background_state_.should_evaluate;
    if (state_.callback_failure.empty()) state_.callback_failure = background_state_.callback_failure;
    if (run_result_) run_result_->last_checkpoint = published.dir;
    notify("checkpoint saved (" + background_reason_ + ", in the background): " + published.dir.string() +
           "; written in " + std::to_string(static_cast<int64_t>(background_write_ms_)) + " ms, published after step " +
           std::to_string(state_.step) + (waited ? " (waited for)" : ""));
  } catch (const util::IoError& e) {
    save_failed(step, e);
  }
  window_stall_ms_ += ms_since(t0);
}

void Trainer::finish_background_save() {
  const bool in_flight = background_ != nullptr;
  begin_background_publish();
  complete_background_save(/*waited=*/in_flight);
}

}  // namespace hftrain::train
