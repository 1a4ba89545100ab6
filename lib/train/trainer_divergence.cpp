// Trainer's handling of non-finite and divergent steps (trainer.on_nonfinite, trainer.spike.*):
// skip the update, roll back to the newest checkpoint before the step that verifies (and skip the
// data that led there), or stop with a checkpoint.
#include <limits>

#include <torch/torch.h>

#include "ckpt/layout.h"
#include "ckpt/verify.h"
#include "model/numeric_trace.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/log.h"

namespace hftrain::train {
namespace {

const char* policy_name(config::OnNonfinite policy) {
  switch (policy) {
    case config::OnNonfinite::kSkip: return "skip";
    case config::OnNonfinite::kRollback: return "rollback";
    case config::OnNonfinite::kStop: return "stop";
  }
  return "skip";
}

using model::readable;

bool finite(const torch::Tensor& t) { return torch::isfinite(t.detach()).all().item<bool>(); }

}  // namespace

std::string Trainer::first_nonfinite() const {
  const auto params = model_->parameters_by_name();
  for (const auto& [name, p] : params) {
    if (readable(p) && !finite(p)) return "parameter " + name;
  }
  for (const auto& [name, p] : params) {
    if (readable(p.grad()) && !finite(p.grad())) return "the gradient of " + name;
  }
  // Sharded strategies hold the reduced gradients in their buckets.
  const std::vector<torch::Tensor> grads = strategy_->grads();
  for (size_t i = 0; i < grads.size(); ++i) {
    if (readable(grads[i]) && !finite(grads[i])) {
      return "gradient bucket " + std::to_string(i) + " of " + strategy_->name() + " (its parameters' gradients "
             "are not kept one by one)";
    }
  }
  return "";
}

bool Trainer::handle_bad_step(int64_t step, const StepOutcome& outcome) {
  const config::OnNonfinite policy = config_.trainer.on_nonfinite;
  const std::string& why = outcome.verdict.why;
  if (policy == config::OnNonfinite::kStop) stop_diverged(step, why, outcome.culprit, /*save=*/true);
  const bool too_many = judge_.note_bad();
  if (too_many) {
    stop_diverged(step, why + "; " + std::to_string(judge_.consecutive()) +
                            " bad steps in a row (trainer.max_consecutive_skips)",
                  outcome.culprit, /*save=*/true);
  }
  if (policy == config::OnNonfinite::kSkip) {
    ++window_skipped_;
    notify("step " + std::to_string(step) + " skipped (trainer.on_nonfinite=skip): " + why +
           (outcome.culprit.empty() ? std::string() : "; the first non-finite: " + outcome.culprit) + "; samples " +
           std::to_string(step_first_sample_) + "-" + std::to_string(loaders_.train->cursor() - 1) + "; " +
           std::to_string(judge_.consecutive()) + " in a row");
    return false;
  }
  roll_back(step, why, loaders_.train->cursor());
  return true;
}

void Trainer::handle_device_skips(const DeviceSkipJudge::Report& r, const std::string& culprit) {
  window_targets_ -= r.dropped_targets;
  window_skipped_ += r.skipped;
  const auto samples = [this](int64_t step) {
    const auto it = unread_samples_.find(step);
    if (it == unread_samples_.end() || it->second.second <= it->second.first) return std::string();
    return "; samples " + std::to_string(it->second.first) + "-" + std::to_string(it->second.second - 1);
  };
  const auto named = [&](int64_t step) {
    return step == state_.step && !culprit.empty() ? "; the first non-finite: " + culprit : std::string();
  };
  if (r.last_bad_step >= 0 && r.last_bad_step != r.limit_step) {
    const int64_t earlier = r.skipped - 1;
    notify("step " + std::to_string(r.last_bad_step) + " skipped (trainer.on_nonfinite=skip): " +
           nonfinite_why(r.last_loss, r.last_norm) + named(r.last_bad_step) + samples(r.last_bad_step) +
           (r.last_bad_step == state_.step ? "; " + std::to_string(r.consecutive) + " in a row" : std::string()) +
           (earlier > 0 ? "; " + std::to_string(earlier) + " more skipped since step " +
                              std::to_string(unread_samples_.empty() ? 0 : unread_samples_.begin()->first)
                        : std::string()));
  }
  const std::string limit_samples = samples(r.limit_step);
  unread_samples_.clear();
  if (r.limit_step < 0) return;
  // The step that made max_consecutive_skips in a row latched every later update off: the weights
  // are that step's, as stopping there would have left them.
  stop_diverged(r.limit_step,
                nonfinite_why(r.limit_loss, r.limit_norm) + "; " +
                    std::to_string(config_.trainer.max_consecutive_skips) +
                    " bad steps in a row (trainer.max_consecutive_skips)" +
                    (r.limit_step != state_.step ? "; read at step " + std::to_string(state_.step) + limit_samples
                                                 : std::string()),
                r.limit_step == state_.step ? culprit : std::string(), /*save=*/true);
}

bool Trainer::read_lazy_verdicts() {
  if (device_skip_ && device_skip_->pending()) handle_device_skips(device_skip_->read(), "");
  return rolled_back_lazily();
}

bool Trainer::rolled_back_lazily() {
  if (!first_bad_step_.defined()) return false;
  const int64_t bad = first_bad_step_.item<int64_t>();
  if (bad < 0) {
    judge_.note_good();
    cursor_after_.erase(cursor_after_.begin(), cursor_after_.lower_bound(state_.step));
    return false;
  }
  const std::string why = "the gradient norm is not finite";
  if (judge_.note_bad()) {
    stop_diverged(bad, why + "; " + std::to_string(judge_.consecutive()) +
                           " rollbacks in a row (trainer.max_consecutive_skips)",
                  "", /*save=*/false);
  }
  const auto after = cursor_after_.find(bad);
  roll_back(bad, why, after != cursor_after_.end() ? after->second : loaders_.train->cursor());
  return true;
}

void Trainer::roll_back(int64_t bad_step, const std::string& why, uint64_t skip_to) {
  finish_background_save();  // a save in flight (of a step before this one) is a checkpoint to go back to
  // Rank 0 chooses (verifying reads every file once, not once per rank) and tells the others.
  int64_t chosen = -1;
  if (world_->is_main()) {
    if (const auto choice = ckpt::newest_verified(run_dir_, nullptr, bad_step)) chosen = choice->chosen.step;
  }
  chosen = reduce_over_ranks(chosen, parallel::ReduceOp::kMax);
  if (chosen < 0) {
    throw util::DivergedError("step " + std::to_string(bad_step) + ": " + why + "; trainer.on_nonfinite=rollback " +
                                  "found no checkpoint before it that verifies in " + run_dir_.string(),
                              "save checkpoints more often (checkpoint.every_steps), or set "
                              "trainer.on_nonfinite=skip");
  }
  const std::filesystem::path dir = run_dir_ / ckpt::checkpoint_dir_name(chosen);
  // Divergence that comes back after every rollback to the same checkpoint (good steps between,
  // so not "in a row") is given up on after as many rollbacks as bad steps in a row would be.
  same_rollbacks_ = chosen == last_rollback_step_ ? same_rollbacks_ + 1 : 1;
  last_rollback_step_ = chosen;
  const int64_t most = config_.trainer.max_consecutive_skips;
  if (most > 0 && same_rollbacks_ > most) {
    stop_diverged(bad_step, why + "; rolled back to " + dir.string() + " " + std::to_string(most) +
                                " times already (trainer.max_consecutive_skips)",
                  "", /*save=*/false);
  }
  rolling_back_ = true;
  try {
    restore(dir, /*allow_data_change=*/false);
  } catch (...) {
    rolling_back_ = false;
    throw;
  }
  rolling_back_ = false;
  const uint64_t from = loaders_.train->cursor();
  loaders_.train->seek(skip_to);
  cursor_after_.clear();
  if (first_bad_step_.defined()) first_bad_step_.fill_(-1);
  // The discarded steps' window figures go with them (restore set the loss window).
  window_skipped_ = 0;
  window_aux_ = torch::Tensor();
  window_aux_count_ = 0;
  notify("step " + std::to_string(bad_step) + ": " + why + "; rolled back to " + dir.string() + " (step " +
         std::to_string(state_.step) + ") and skipped samples " + std::to_string(from) + "-" +
         std::to_string(skip_to - 1) + ", the data of steps " + std::to_string(state_.step + 1) + "-" +
         std::to_string(bad_step) + " (trainer.on_nonfinite=rollback)");
}

void Trainer::stop_diverged(int64_t step, const std::string& why, const std::string& culprit, bool save) {
  std::string saved;
  try {
    finish_background_save();  // the save in flight holds a step before this one: published first
  } catch (const util::IoError& e) {
    saved = std::string("; the checkpoint being written in the background failed: ") + e.what();
  }
  // Weights that are no longer finite (a NaN in the forward, an update that overflowed) are not
  // saved: a checkpoint of them would be the newest one a resume picks. Every rank agrees.
  if (save) {
    bool finite_weights = true;
    for (const auto& [name, p] : model_->parameters_by_name()) {
      if (readable(p) && !finite(p)) finite_weights = false;
    }
    save = reduce_over_ranks(finite_weights ? 0 : 1, parallel::ReduceOp::kMax) == 0;
    if (!save) saved = "; the weights are not finite, so no checkpoint was saved";
  }
  if (save) {
    // The state after the step with its update dropped: what a skip would have left.
    try {
      saved = "; saved " + save_checkpoint().string() + " for debugging (the weights before the step)";
    } catch (const util::IoError& e) {
      saved = std::string("; the checkpoint for debugging could not be saved: ") + e.what();
    }
  }
  throw util::DivergedError(
      "step " + std::to_string(step) + ": " + why +
          (culprit.empty() ? std::string() : "; the first non-finite: " + culprit) +
          "; stopped (trainer.on_nonfinite=" + policy_name(config_.trainer.on_nonfinite) + ")" + saved,
      (step == state_.step ? "the step's samples are " + std::to_string(step_first_sample_) + "-" +
                                 std::to_string(loaders_.train->cursor() - 1) + " of the training data; "
                           : std::string()) +
          "lower optimizer.lr or clip harder (trainer.max_grad_norm), or set trainer.on_nonfinite=skip or rollback "
          "to train past such steps");
}

}  // namespace hftrain::train
