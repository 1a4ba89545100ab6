#include "train/preference/objectives.h"

#include <torch/torch.h>

namespace hftrain::train::preference {

namespace {

// At least fp32: the log-softmax of bf16 logits loses the digits a sequence's sum needs.
torch::Tensor at_least_fp32(const torch::Tensor& t) {
  return t.scalar_type() == torch::kDouble ? t : t.to(torch::kFloat32);
}

}  // namespace

SequenceLogps labelled_logps(const torch::Tensor& logits, const torch::Tensor& labels) {
  TORCH_CHECK(logits.dim() == 3 && labels.dim() == 2 && logits.size(0) == labels.size(0) &&
                  logits.size(1) == labels.size(1),
              "labelled_logps: logits (R, T, V) and labels (R, T)");
  const auto scoring = at_least_fp32(logits);
  const auto mask = labels.ne(-100);
  const auto targets = labels.clamp_min(0);
  // log p(target) = logit(target) - logsumexp(logits): one gather, no (R, T, V) log-softmax kept.
  const auto picked = scoring.gather(2, targets.unsqueeze(-1)).squeeze(-1) - scoring.logsumexp(-1);
  const auto weights = mask.to(scoring.scalar_type());
  return {(picked * weights).sum(1), weights.sum(1).clamp_min(1)};
}

SequenceLogps completion_logps(const torch::Tensor& logits, const torch::Tensor& input_ids,
                               const torch::Tensor& completion_mask) {
  TORCH_CHECK(logits.dim() == 3 && input_ids.dim() == 2 && logits.size(0) == input_ids.size(0) &&
                  logits.size(1) == input_ids.size(1) && completion_mask.sizes() == input_ids.sizes(),
              "completion_logps: logits (R, T, V), input_ids and completion_mask (R, T)");
  // As labels: position t's target is token t + 1 where that token counts; the last position has none.
  const int64_t T = input_ids.size(1);
  const auto next = input_ids.narrow(1, 1, T - 1);
  const auto counts = completion_mask.narrow(1, 1, T - 1).ne(0);
  auto labels = torch::full_like(input_ids, -100);
  labels.narrow(1, 0, T - 1).copy_(torch::where(counts, next, torch::full_like(next, -100)));
  return labelled_logps(logits, labels);
}

PairLogps PairLogps::split(const SequenceLogps& both) {
  const int64_t B = both.sum.size(0) / 2;
  TORCH_CHECK(both.sum.size(0) == 2 * B, "PairLogps::split: an odd number of sequences");
  return {{both.sum.narrow(0, 0, B), both.tokens.narrow(0, 0, B)},
          {both.sum.narrow(0, B, B), both.tokens.narrow(0, B, B)}};
}

torch::Tensor PreferenceTerms::accuracies() const {
  return chosen_rewards.gt(rejected_rewards).to(chosen_rewards.scalar_type());
}

torch::Tensor PreferenceTerms::margins() const {
  return chosen_rewards - rejected_rewards;
}

PreferenceTerms dpo(const PairLogps& policy, const PairLogps& reference, const DpoOptions& o) {
  const auto chosen_ratio = policy.chosen.sum - reference.chosen.sum.detach();
  const auto rejected_ratio = policy.rejected.sum - reference.rejected.sum.detach();
  const auto delta = chosen_ratio - rejected_ratio;
  const double beta = o.beta, eps = o.label_smoothing;
  torch::Tensor losses;
  switch (o.loss) {
    case DpoLoss::kSigmoid:
      losses = -torch::log_sigmoid(beta * delta);
      break;
    case DpoLoss::kHinge:
      losses = torch::relu(1 - beta * delta);
      break;
    case DpoLoss::kIpo: {
      // IPO on log-ratios averaged over each answer's completion tokens (TRL divides both sums).
      const auto averaged = chosen_ratio / policy.chosen.tokens - rejected_ratio / policy.rejected.tokens;
      losses = (averaged - 1 / (2 * beta)).pow(2);
      break;
    }
    case DpoLoss::kRobust:
      losses =
          (-(1 - eps) * torch::log_sigmoid(beta * delta) + eps * torch::log_sigmoid(-beta * delta)) / (1 - 2 * eps);
      break;
  }
  return {losses.mean(), beta * chosen_ratio.detach(), beta * rejected_ratio.detach(), policy.chosen.sum.detach(),
          policy.rejected.sum.detach()};
}

PreferenceTerms simpo(const PairLogps& policy, const SimpoOptions& o, const std::optional<torch::Tensor>& chosen_nll) {
  const auto chosen = policy.chosen.mean(), rejected = policy.rejected.mean();
  const auto z = o.beta * (chosen - rejected) - o.gamma;
  auto loss = (-(1 - o.label_smoothing) * torch::log_sigmoid(z) - o.label_smoothing * torch::log_sigmoid(-z)).mean();
  if (o.cpo_alpha != 0) {
    TORCH_CHECK(chosen_nll.has_value(), "simpo: cpo_alpha needs the chosen answers' cross-entropy");
    loss = loss + o.cpo_alpha * *chosen_nll;
  }
  return {loss, o.beta * chosen.detach(), o.beta * rejected.detach(), chosen.detach(), rejected.detach()};
}

OrpoTerms orpo(const PairLogps& policy, const torch::Tensor& chosen_nll, double beta) {
  const auto chosen = at_least_fp32(policy.chosen.mean()), rejected = at_least_fp32(policy.rejected.mean());
  // log(1 - exp(x)) for x < 0, stable on both sides of -ln 2.
  const auto log1mexp = [](const torch::Tensor& x) {
    return torch::where(x < -std::log(2.0), torch::log1p(-torch::exp(x)), torch::log(-torch::expm1(x)));
  };
  const auto log_odds = (chosen - rejected) - (log1mexp(chosen) - log1mexp(rejected));
  const auto ratio = torch::log_sigmoid(log_odds);
  OrpoTerms out;
  out.loss = chosen_nll - (beta * ratio).mean();
  out.chosen_rewards = beta * chosen.detach();
  out.rejected_rewards = beta * rejected.detach();
  out.chosen_logps = chosen.detach();
  out.rejected_logps = rejected.detach();
  out.log_odds_ratio = ratio.detach();
  out.log_odds = log_odds.detach();
  return out;
}

KtoTerms kto(const torch::Tensor& policy, const torch::Tensor& reference, const torch::Tensor& desirable,
             const torch::Tensor& kl, const KtoOptions& o) {
  const auto ratio = policy - reference.detach();
  const auto kl_point = kl.detach().to(ratio.dtype());
  const auto good = desirable.to(torch::kBool);
  // Desirable rows: 1 - sigma(beta (ratio - kl)); undesirable ones: 1 - sigma(beta (kl - ratio)).
  const auto losses = torch::where(good, o.desirable_weight * (1 - torch::sigmoid(o.beta * (ratio - kl_point))),
                                   o.undesirable_weight * (1 - torch::sigmoid(o.beta * (kl_point - ratio))));
  return {losses.mean(), o.beta * ratio.detach()};
}

torch::Tensor kto_kl(const torch::Tensor& kl_policy, const torch::Tensor& kl_reference) {
  return (kl_policy.detach() - kl_reference.detach()).mean();
}

torch::Tensor kto_kl_point(const torch::Tensor& mean_over_ranks) {
  return mean_over_ranks.clamp_min(0);
}

RewardTerms bradley_terry(const torch::Tensor& chosen_scores, const torch::Tensor& rejected_scores,
                          const std::optional<torch::Tensor>& margin, std::optional<double> center_coefficient) {
  auto difference = chosen_scores - rejected_scores;
  if (margin) difference = difference - margin->to(difference.dtype());
  auto loss = (-torch::log_sigmoid(difference)).mean();
  if (center_coefficient) loss = loss + *center_coefficient * (chosen_scores + rejected_scores).pow(2).mean();
  const auto plain = (chosen_scores - rejected_scores).detach();
  return {loss, plain.gt(0).to(plain.scalar_type()), plain};
}

}  // namespace hftrain::train::preference
