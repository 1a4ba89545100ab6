// The offline preference objectives, computed as TRL computes them (see docs/notes/preference.md for
// the source read): DPO and its loss types, SimPO (TRL's CPO with loss_type simpo), ORPO, KTO and the
// Bradley-Terry loss of a reward model. Pure functions of tensors: the task that trains them gets the
// sequences' log-probabilities (completion_logps) from the model, calls one of these, and logs the
// per-pair values under TRL's metric names. Every loss is the mean over the micro-batch's pairs (rows
// for KTO), as TRL's is; the rewards and log-probs they return are detached.
#pragma once

#include <optional>

#include <torch/types.h>

namespace hftrain::train::preference {

// Next-token log-probabilities over each sequence's completion: logits (R, T, V) score input_ids
// (R, T) shifted by one (position t scores token t + 1), counted where completion_mask (R, T) is 1
// at the scored token, so the prompt and the padding never count. Computed in fp32 at least.
struct SequenceLogps {
  torch::Tensor sum;     // (R) the summed log-probs, with the graph of the logits
  torch::Tensor tokens;  // (R) the completion tokens scored, at least 1 (TRL's clamp)
  torch::Tensor mean() const { return sum / tokens; }
};
SequenceLogps completion_logps(const torch::Tensor& logits, const torch::Tensor& input_ids,
                               const torch::Tensor& completion_mask);
// The same from a batch's labels (R, T), already shifted: labels[t] is the target of position t,
// -100 where none (data/preference.h's rows).
SequenceLogps labelled_logps(const torch::Tensor& logits, const torch::Tensor& labels);

// The chosen and rejected halves of 2B sequences stacked chosen first (TRL's concatenated forward).
struct PairLogps {
  SequenceLogps chosen, rejected;
  static PairLogps split(const SequenceLogps& both);
};

// What an objective hands back: the micro-batch loss and the per-pair values TRL logs.
struct PreferenceTerms {
  torch::Tensor loss;              // scalar, with the graph
  torch::Tensor chosen_rewards;    // (B) rewards/chosen per pair
  torch::Tensor rejected_rewards;  // (B) rewards/rejected per pair
  torch::Tensor chosen_logps;    // (B) logps/chosen per pair (summed, or length-averaged where the objective averages)
  torch::Tensor rejected_logps;  // (B)
  // rewards/accuracies (strict >) and rewards/margins per pair.
  torch::Tensor accuracies() const;
  torch::Tensor margins() const;
};

// DPO's loss types (TRL DPOConfig.loss_type): sigmoid (the paper), hinge (RSO), ipo (on
// length-averaged log-ratios), robust (label smoothing as noise, divided by 1 - 2 eps).
enum class DpoLoss { kSigmoid, kHinge, kIpo, kRobust };
struct DpoOptions {
  DpoLoss loss = DpoLoss::kSigmoid;
  double beta = 0.1;
  double label_smoothing = 0.0;  // robust's eps, in [0, 0.5)
};
// The policy's log-probs against the reference's (a frozen copy, the base without adapters, or
// precomputed): rewards beta * (policy - reference) of each answer.
PreferenceTerms dpo(const PairLogps& policy, const PairLogps& reference, const DpoOptions& options);

// SimPO: no reference; length-averaged log-probs, the margin gamma: -(1 - eps) log sigma(beta z - gamma)
// - eps log sigma(gamma - beta z) with z the difference of the averages, plus cpo_alpha times
// `chosen_nll` (the chosen completions' token-mean cross-entropy; TRL's CPO default 1, pure SimPO 0).
struct SimpoOptions {
  double beta = 0.1;  // TRL's CPOConfig default (the SimPO paper tunes it from 2 to 10)
  double gamma = 0.5;
  double label_smoothing = 0.0;
  double cpo_alpha = 0.0;
};
PreferenceTerms simpo(const PairLogps& policy, const SimpoOptions& options,
                      const std::optional<torch::Tensor>& chosen_nll = std::nullopt);

// ORPO: chosen_nll (the chosen sequences' token-mean cross-entropy over prompt and completion) minus
// beta times the mean log sigma of the log odds ratio of the length-averaged log-probs. No reference.
struct OrpoTerms : PreferenceTerms {
  torch::Tensor log_odds_ratio;  // (B) log sigma(log odds)
  torch::Tensor log_odds;        // (B)
};
OrpoTerms orpo(const PairLogps& policy, const torch::Tensor& chosen_nll, double beta);

// KTO on unpaired rows: `desirable` (N) bool, the policy's and reference's summed log-probs (N), and
// the KL reference point (kto_kl, reduced over the ranks by the caller and clamped at 0). The loss is
// one mean over all N rows, each weighted by its class's weight. Rewards are beta * (policy - ref).
struct KtoOptions {
  double beta = 0.1;
  double desirable_weight = 1.0;
  double undesirable_weight = 1.0;
};
struct KtoTerms {
  torch::Tensor loss;     // scalar
  torch::Tensor rewards;  // (N) beta * (policy - reference), detached
};
KtoTerms kto(const torch::Tensor& policy, const torch::Tensor& reference, const torch::Tensor& desirable,
             const torch::Tensor& kl, const KtoOptions& options);
// This rank's KL estimate: the mean over its mismatched (prompt, other completion) rows of policy minus
// reference, without a graph. Average it over the ranks, then clamp at 0 (kto_kl_point).
torch::Tensor kto_kl(const torch::Tensor& kl_policy, const torch::Tensor& kl_reference);
torch::Tensor kto_kl_point(const torch::Tensor& mean_over_ranks);

// A reward model's Bradley-Terry loss: the mean of -log sigma(r_chosen - r_rejected - margin), plus
// center_coefficient times the mean of (r_chosen + r_rejected)^2 when set. Scores (B) each.
struct RewardTerms {
  torch::Tensor loss;      // scalar
  torch::Tensor accuracy;  // (B) r_chosen > r_rejected
  torch::Tensor margin;    // (B) r_chosen - r_rejected, detached
};
RewardTerms bradley_terry(const torch::Tensor& chosen_scores, const torch::Tensor& rejected_scores,
                          const std::optional<torch::Tensor>& margin = std::nullopt,
                          std::optional<double> center_coefficient = std::nullopt);

}  // namespace hftrain::train::preference
