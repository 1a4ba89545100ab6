#include "train/preference/preference_task.h"

#include <torch/torch.h>

#include "model/dense.h"
#include "train/task/task_decorator.h"
#include "util/error.h"

namespace hftrain::train {

torch::Tensor TaskModel::logits(const data::Batch& /*batch*/) {
  throw util::ConfigError("this task has no per-token outputs to score (preference objectives train decoders)",
                          "set preference.objective=none, or train a decoder");
}

std::vector<std::pair<std::string, double>> window_means(const TaskModel& model, const torch::Tensor& sums,
                                                         const std::string& prefix) {
  if (!sums.defined()) return {};
  return model.window_figures(sums, prefix);
}

std::vector<std::pair<std::string, double>> TaskModel::window_figures(const torch::Tensor& sums,
                                                                      const std::string& prefix) const {
  const TaskModel& model = *this;
  std::vector<std::pair<std::string, double>> out;
  if (!sums.defined()) return out;
  const torch::Tensor host = sums.to(torch::kCPU, torch::kFloat64);
  const double count = host[host.size(0) - 1].item<double>();
  const std::vector<std::string> names = model.window_metric_names();
  for (size_t i = 0; i < names.size() && count > 0; ++i) {
    out.emplace_back(prefix + names[i], host[static_cast<int64_t>(i)].item<double>() / count);
  }
  return out;
}

namespace {

using preference::PairLogps;
using preference::SequenceLogps;

class FrozenCopy final : public PreferenceReference {
 public:
  FrozenCopy(const TaskModel& policy, const model::ModelSpec& spec, const torch::Device& device)
      : copy_(make_causal_lm(spec, model::WeightInit::kSkip)) {
    torch::NoGradGuard no_grad;
    std::unordered_map<std::string, torch::Tensor> source;
    for (auto& [name, p] : policy.parameters_by_name()) source.emplace(name, p);
    for (auto& [name, p] : copy_->parameters_by_name()) {
      const auto it = source.find(name);
      TORCH_CHECK(it != source.end(), "the preference reference has no source for ", name);
      p.set_data(it->second.detach().to(device, /*non_blocking=*/false, /*copy=*/true));
      p.set_requires_grad(false);
      parameters_ += p.numel();
    }
    copy_->module().to(device);
    copy_->module().eval();
  }
  SequenceLogps logps(const data::Batch& batch) override {
    torch::NoGradGuard no_grad;
    return preference::labelled_logps(copy_->logits(batch), batch.labels);
  }
  int64_t parameters() const override { return parameters_; }

 private:
  std::unique_ptr<TaskModel> copy_;
  int64_t parameters_ = 0;
};

class AdaptersOffReference final : public PreferenceReference {
 public:
  AdaptersOffReference(TaskModel& policy, bool continued) : policy_(policy) {
    if (!continued) return;
    torch::NoGradGuard no_grad;
    for (auto& [name, p] : policy.parameters_by_name()) {
      if (!p.requires_grad()) continue;
      trained_.push_back(p);
      starting_.push_back(p.detach().clone());
      parameters_ += p.numel();
    }
  }
  SequenceLogps logps(const data::Batch& batch) override {
    torch::NoGradGuard no_grad;
    const bool training = policy_.module().is_training();
    policy_.module().eval();  // no dropout in the reference
    SequenceLogps out;
    if (trained_.empty()) {
      model::AdaptersOff off;
      out = preference::labelled_logps(policy_.logits(batch), batch.labels);
    } else {
      // The starting values in place for this forward, then the trained ones back (the policy's own
      // forward, whose graph training keeps, runs after).
      std::vector<torch::Tensor> now;
      for (size_t i = 0; i < trained_.size(); ++i) {
        now.push_back(trained_[i].detach().clone());
        trained_[i].detach().copy_(starting_[i]);
      }
      out = preference::labelled_logps(policy_.logits(batch), batch.labels);
      for (size_t i = 0; i < trained_.size(); ++i) trained_[i].detach().copy_(now[i]);
    }
    policy_.module().train(training);
    return out;
  }
  int64_t parameters() const override { return parameters_; }

 private:
  TaskModel& policy_;
  std::vector<torch::Tensor> trained_, starting_;  // a continued adapter's parameters and their starting values
  int64_t parameters_ = 0;
};

// The chosen rows' token-mean cross-entropy over every real token after the first (prompt and answer):
// ORPO's NLL term, as TRL's ORPOTrainer takes it. `keep`: the pairs that count (undefined: all).
torch::Tensor chosen_sequence_nll(const torch::Tensor& logits, const data::Batch& batch, int64_t pairs,
                                  const torch::Tensor& keep) {
  const auto rows = [&](const torch::Tensor& t) {
    const torch::Tensor chosen = t.narrow(0, 0, pairs);
    return keep.defined() ? chosen.index_select(0, keep) : chosen;
  };
  // Every real token after the first counts: the attention mask as the completion mask.
  const preference::SequenceLogps lp =
      preference::completion_logps(rows(logits), rows(batch.input_ids), rows(batch.attention_mask));
  return -lp.sum.sum() / lp.tokens.sum();
}

class PreferenceTask final : public TaskDecorator {
 public:
  PreferenceTask(std::unique_ptr<TaskModel> policy, const config::PreferenceConfig& config,
                 std::unique_ptr<PreferenceReference> reference)
      : TaskDecorator(std::move(policy)), config_(config), reference_(std::move(reference)) {
    names_ = {"rewards/chosen", "rewards/rejected", "rewards/accuracies",
              "rewards/margins", "logps/chosen",     "logps/rejected"};
    if (config_.objective == config::PreferenceObjective::kOrpo) {
      names_.insert(names_.end(), {"nll_loss", "log_odds_ratio", "log_odds_chosen"});
    }
    precomputed_ = config_.reference == config::PreferenceReference::kPrecomputed;
    TORCH_CHECK(config_.objective != config::PreferenceObjective::kDpo || reference_ || precomputed_,
                "DPO needs a reference");
  }

  torch::Tensor loss_sum(const data::Batch& batch, double /*label_smoothing*/, torch::Tensor* logits_out) override {
    const int64_t pairs = batch.input_ids.size(0) / 2;
    // The reference first: the policy's forward is the last, whose auxiliary loss the step takes.
    std::optional<PairLogps> reference;
    if (reference_) reference = PairLogps::split(reference_->logps(batch));
    if (precomputed_ && config_.objective == config::PreferenceObjective::kDpo) {
      TORCH_CHECK(batch.reference_logps.defined(), "the batch has no precomputed reference log-probs");
      // The values computed before training; the counts of the answers' tokens are the batch's.
      const preference::SequenceLogps given{
          batch.reference_logps.to(torch::kFloat32),
          batch.labels.ne(data::kIgnoreIndex).sum(1).clamp_min(1).to(torch::kFloat32)};
      reference = PairLogps::split(given);
    }
    const torch::Tensor logits = inner().logits(batch);
    if (logits_out) *logits_out = logits;
    PairLogps policy = PairLogps::split(preference::labelled_logps(logits, batch.labels));
    // Pairs past the end of an evaluation pass carry no labels (the loader masks them): left out.
    torch::Tensor keep;
    if (batch.num_target_tokens < pairs) {
      keep = batch.labels.narrow(0, 0, pairs).ne(data::kIgnoreIndex).any(1).nonzero().view({-1});
      policy = select(policy, keep);
      if (reference) reference = select(*reference, keep);
    }
    const int64_t kept = keep.defined() ? keep.size(0) : pairs;
    if (kept == 0) return logits.sum() * 0;  // no pair of this batch counts; keeps the graph connected

    preference::PreferenceTerms terms;
    std::vector<torch::Tensor> extra;
    switch (config_.objective) {
      case config::PreferenceObjective::kDpo:
        terms = preference::dpo(policy, *reference,
                                {dpo_loss(config_.loss_type), config_.beta, config_.label_smoothing});
        break;
      case config::PreferenceObjective::kSimpo: {
        std::optional<torch::Tensor> nll;
        if (config_.cpo_alpha != 0) nll = -policy.chosen.sum.sum() / policy.chosen.tokens.sum();
        terms = preference::simpo(policy, {config_.beta, config_.gamma, config_.label_smoothing, config_.cpo_alpha},
                                  nll);
        break;
      }
      case config::PreferenceObjective::kOrpo: {
        const torch::Tensor nll = chosen_sequence_nll(logits, batch, pairs, keep);
        const preference::OrpoTerms o = preference::orpo(policy, nll, config_.beta);
        extra = {nll.detach().expand({kept}), o.log_odds_ratio, o.log_odds};
        terms = o;
        break;
      }
      case config::PreferenceObjective::kNone:
      case config::PreferenceObjective::kReward:
      case config::PreferenceObjective::kKto: TORCH_CHECK(false, "not a pair objective (reward_task.h, kto_task.h)");
    }
    window_.add(window_row(terms, extra, kept));
    return terms.loss * static_cast<double>(kept);
  }

  std::vector<std::string> window_metric_names() const override { return names_; }
  torch::Tensor take_window_sums(bool evaluation) override { return window_.take(evaluation); }

 private:
  static preference::DpoLoss dpo_loss(config::DpoLossType t) {
    switch (t) {
      case config::DpoLossType::kHinge: return preference::DpoLoss::kHinge;
      case config::DpoLossType::kIpo: return preference::DpoLoss::kIpo;
      case config::DpoLossType::kRobust: return preference::DpoLoss::kRobust;
      case config::DpoLossType::kSigmoid: break;
    }
    return preference::DpoLoss::kSigmoid;
  }
  static PairLogps select(const PairLogps& p, const torch::Tensor& keep) {
    return {{p.chosen.sum.index_select(0, keep), p.chosen.tokens.index_select(0, keep)},
            {p.rejected.sum.index_select(0, keep), p.rejected.tokens.index_select(0, keep)}};
  }
  // The window's sums per name (TRL's per-pair values summed), then the pairs.
  static torch::Tensor window_row(const preference::PreferenceTerms& t, const std::vector<torch::Tensor>& extra,
                                  int64_t pairs) {
    std::vector<torch::Tensor> sums{t.chosen_rewards.sum(), t.rejected_rewards.sum(), t.accuracies().sum(),
                                    t.margins().sum(),      t.chosen_logps.sum(),     t.rejected_logps.sum()};
    for (const torch::Tensor& e : extra) sums.push_back(e.sum());
    for (auto& s : sums) s = s.detach().to(torch::kFloat64);
    sums.push_back(torch::full({}, static_cast<double>(pairs), sums[0].options()));
    return torch::stack(sums);
  }

  config::PreferenceConfig config_;
  std::unique_ptr<PreferenceReference> reference_;
  std::vector<std::string> names_;
  bool precomputed_ = false;  // DPO's reference log-probs come with each batch (reference_pass.h)
  WindowSums window_;
};

}  // namespace

std::unique_ptr<PreferenceReference> frozen_copy_reference(const TaskModel& policy, const model::ModelSpec& spec,
                                                           const torch::Device& device) {
  return std::make_unique<FrozenCopy>(policy, spec, device);
}

std::unique_ptr<PreferenceReference> adapters_off_reference(TaskModel& policy, bool continued) {
  return std::make_unique<AdaptersOffReference>(policy, continued);
}

std::unique_ptr<TaskModel> make_preference_task(std::unique_ptr<TaskModel> policy,
                                                const config::PreferenceConfig& config,
                                                std::unique_ptr<PreferenceReference> reference) {
  return std::make_unique<PreferenceTask>(std::move(policy), config, std::move(reference));
}

}  // namespace hftrain::train
