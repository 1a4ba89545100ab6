#include "train/preference/kto_task.h"

#include <torch/torch.h>

#include "train/preference/objectives.h"
#include "train/task/task_decorator.h"

namespace hftrain::train {
namespace {

// The window's entries: the sums, then their counts.
enum Entry : int64_t { kChosenRewards, kRejectedRewards, kChosenLogps, kRejectedLogps, kKl, kChosen, kRejected,
                       kForwards, kEntries };

class KtoTask final : public TaskDecorator {
 public:
  KtoTask(std::unique_ptr<TaskModel> policy, const config::PreferenceConfig& config,
          std::unique_ptr<PreferenceReference> reference,
          std::function<torch::Tensor(const torch::Tensor&)> mean_over_ranks)
      : TaskDecorator(std::move(policy)),
        options_{config.beta, config.desirable_weight, config.undesirable_weight},
        reference_(std::move(reference)),
        mean_over_ranks_(std::move(mean_over_ranks)) {
    TORCH_CHECK(reference_, "KTO needs a reference");
  }

  torch::Tensor loss_sum(const data::Batch& batch, double /*label_smoothing*/, torch::Tensor* logits_out) override {
    const int64_t n = batch.input_ids.size(0) / 2;
    // The reference first: the policy's forward is the last, whose auxiliary loss the step takes.
    const preference::SequenceLogps reference = reference_->logps(batch);
    const torch::Tensor logits = inner().logits(batch);
    if (logits_out) *logits_out = logits;
    const torch::Tensor policy = preference::labelled_logps(logits, batch.labels).sum;
    // Examples past the end of an evaluation pass carry no labels (the loader masks them, and their KL rows).
    torch::Tensor keep;
    if (batch.num_target_tokens < n) {
      keep = batch.labels.narrow(0, 0, n).ne(data::kIgnoreIndex).any(1).nonzero().view({-1});
    }
    const auto rows = [&](const torch::Tensor& t, int64_t first) {
      const torch::Tensor part = t.narrow(0, first, n);
      return keep.defined() ? part.index_select(0, keep) : part;
    };
    const int64_t kept = keep.defined() ? keep.size(0) : n;
    // Every rank averages its KL point with the others' on every forward (an evaluation's batch past the
    // end of the data counts 0).
    const torch::Tensor kl_here = kept > 0 ? preference::kto_kl(rows(policy, n), rows(reference.sum, n))
                                           : torch::zeros({}, policy.options());
    const torch::Tensor kl = preference::kto_kl_point(mean_over_ranks_ ? mean_over_ranks_(kl_here) : kl_here);
    if (kept == 0) return logits.sum() * 0;
    const torch::Tensor desirable = rows(batch.desirable, 0);
    const torch::Tensor own = rows(policy, 0);
    const preference::KtoTerms terms =
        preference::kto(own, rows(reference.sum, 0).to(own.dtype()), desirable, kl, options_);
    // TRL's figures: per class, the rewards and log-probs summed, and the classes' counts.
    const torch::Tensor is_chosen = desirable.to(torch::kFloat64), is_rejected = 1 - is_chosen;
    const torch::Tensor rewards = terms.rewards.to(torch::kFloat64), logps = own.detach().to(torch::kFloat64);
    window_.add(torch::stack({(rewards * is_chosen).sum(), (rewards * is_rejected).sum(), (logps * is_chosen).sum(),
                              (logps * is_rejected).sum(), kl.to(torch::kFloat64).reshape({}), is_chosen.sum(),
                              is_rejected.sum(), torch::ones({}, is_chosen.options())}));
    return terms.loss * static_cast<double>(kept);
  }

  std::vector<std::string> window_metric_names() const override {
    return {"rewards/chosen", "rewards/rejected", "logps/chosen", "logps/rejected", "kl"};
  }
  torch::Tensor take_window_sums(bool evaluation) override { return window_.take(evaluation); }
  std::vector<std::pair<std::string, double>> window_figures(const torch::Tensor& sums,
                                                             const std::string& prefix) const override {
    const torch::Tensor h = sums.to(torch::kCPU, torch::kFloat64);
    const auto at = [&](Entry e) { return h[e].item<double>(); };
    std::vector<std::pair<std::string, double>> out;
    const double chosen = at(kChosen), rejected = at(kRejected);
    if (chosen > 0) {
      out.emplace_back(prefix + "rewards/chosen", at(kChosenRewards) / chosen);
      out.emplace_back(prefix + "logps/chosen", at(kChosenLogps) / chosen);
    }
    if (rejected > 0) {
      out.emplace_back(prefix + "rewards/rejected", at(kRejectedRewards) / rejected);
      out.emplace_back(prefix + "logps/rejected", at(kRejectedLogps) / rejected);
    }
    if (chosen > 0 && rejected > 0) {
      out.emplace_back(prefix + "rewards/margins",
                       at(kChosenRewards) / chosen - at(kRejectedRewards) / rejected);
    }
    if (at(kForwards) > 0) out.emplace_back(prefix + "kl", at(kKl) / at(kForwards));
    return out;
  }

 private:
  preference::KtoOptions options_;
  std::unique_ptr<PreferenceReference> reference_;
  std::function<torch::Tensor(const torch::Tensor&)> mean_over_ranks_;
  WindowSums window_;
};

}  // namespace

std::unique_ptr<TaskModel> make_kto_task(std::unique_ptr<TaskModel> policy, const config::PreferenceConfig& config,
                                         std::unique_ptr<PreferenceReference> reference,
                                         std::function<torch::Tensor(const torch::Tensor&)> mean_over_ranks) {
  return std::make_unique<KtoTask>(std::move(policy), config, std::move(reference), std::move(mean_over_ranks));
}

}  // namespace hftrain::train
