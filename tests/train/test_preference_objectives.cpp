// The preference objectives (train/preference/objectives.h) on values worked out by hand from TRL's
// formulas: the step-0 values (policy equal to reference), each loss type at a known margin, the
// gradient of DPO's sigmoid loss, length averaging (IPO, SimPO, ORPO), KTO's KL point and weights,
// and the reward model's Bradley-Terry loss with a margin and centring.
#include "../torch_catch.h"  // first: see the file

#include <cmath>

#include "train/preference/objectives.h"
#include "train/preference/reward_task.h"

using namespace hftrain::train::preference;

namespace {

torch::Tensor values(std::initializer_list<double> v) {
  return torch::tensor(std::vector<double>(v), torch::kDouble);
}

double item(const torch::Tensor& t) {
  return t.item<double>();
}

double log_sigmoid(double x) {
  return -std::log1p(std::exp(-x));
}

// Two pairs' summed log-probs and completion token counts, chosen and rejected.
PairLogps pair(std::initializer_list<double> chosen, std::initializer_list<double> rejected,
               std::initializer_list<double> chosen_tokens = {1, 1},
               std::initializer_list<double> rejected_tokens = {1, 1}) {
  return {{values(chosen), values(chosen_tokens)}, {values(rejected), values(rejected_tokens)}};
}

}  // namespace

TEST_CASE("preference: completion log-probs sum the shifted targets over the completion only", "[train][preference]") {
  torch::manual_seed(3);
  const auto logits = torch::randn({2, 4, 5}, torch::kDouble);
  const auto ids = torch::tensor({{1, 2, 3, 4}, {0, 4, 4, 0}}, torch::kLong);
  const auto mask = torch::tensor({{0, 0, 1, 1}, {0, 1, 1, 0}}, torch::kLong);  // row 1 ends in padding
  const SequenceLogps lp = completion_logps(logits, ids, mask);
  const auto logp = torch::log_softmax(logits, -1);
  const auto at = [&](int64_t r, int64_t t, int64_t id) { return logp[r][t][id].item<double>(); };
  CHECK(item(lp.sum[0]) == Approx(at(0, 1, 3) + at(0, 2, 4)).epsilon(1e-12));
  CHECK(item(lp.sum[1]) == Approx(at(1, 0, 4) + at(1, 1, 4)).epsilon(1e-12));
  CHECK(lp.tokens.equal(values({2, 2})));
  // bf16 logits are scored in fp32.
  CHECK(completion_logps(logits.to(torch::kBFloat16), ids, mask).sum.scalar_type() == torch::kFloat32);
  // A row with no completion token counts one (TRL's clamp), so averages stay finite.
  CHECK(item(completion_logps(logits, ids, torch::zeros_like(mask)).tokens[0]) == 1.0);
  // From a batch's labels (already shifted, -100 where no target): the same sums.
  const auto labels = torch::tensor({{-100, 3, 4, -100}, {4, 4, -100, -100}}, torch::kLong);
  const SequenceLogps from_labels = labelled_logps(logits, labels);
  CHECK(torch::allclose(from_labels.sum, lp.sum));
  CHECK(from_labels.tokens.equal(lp.tokens));
  const PairLogps halves = PairLogps::split(lp);
  CHECK(item(halves.chosen.sum[0]) == item(lp.sum[0]));
  CHECK(item(halves.rejected.sum[0]) == item(lp.sum[1]));
}

TEST_CASE("preference: DPO's loss types at the start (policy = reference) and at a known margin",
          "[train][preference]") {
  const PairLogps same = pair({-5, -3}, {-7, -2});
  CHECK(item(dpo(same, same, {DpoLoss::kSigmoid, 0.1}).loss) == Approx(std::log(2.0)));
  CHECK(item(dpo(same, same, {DpoLoss::kHinge, 0.1}).loss) == Approx(1.0));
  CHECK(item(dpo(same, same, {DpoLoss::kIpo, 0.1}).loss) == Approx(25.0));  // (1 / (2 beta))^2
  CHECK(item(dpo(same, same, {DpoLoss::kRobust, 0.1, 0.2}).loss) == Approx(std::log(2.0)));
  const PreferenceTerms start = dpo(same, same, {});
  CHECK(item(start.accuracies().sum()) == 0.0);  // strictly greater, as TRL counts

  // Chosen log-ratio +1, rejected -1: the margin is 2.
  const PairLogps policy = pair({-5, -5}, {-7, -7}, {2, 2}, {4, 4});
  const PairLogps reference = pair({-6, -6}, {-6, -6}, {2, 2}, {4, 4});
  const PreferenceTerms sig = dpo(policy, reference, {DpoLoss::kSigmoid, 0.5});
  CHECK(item(sig.loss) == Approx(-log_sigmoid(1.0)));
  CHECK(item(sig.chosen_rewards[0]) == Approx(0.5));
  CHECK(item(sig.rejected_rewards[0]) == Approx(-0.5));
  CHECK(item(sig.margins()[0]) == Approx(1.0));
  CHECK(item(sig.accuracies()[0]) == 1.0);
  CHECK(item(sig.chosen_logps[0]) == -5.0);
  CHECK(item(dpo(policy, reference, {DpoLoss::kHinge, 0.5}).loss) == Approx(0.0));
  CHECK(item(dpo(policy, reference, {DpoLoss::kHinge, 0.25}).loss) == Approx(0.5));
  // IPO averages each log-ratio over its answer's tokens: 1/2 - (-1/4) = 0.75, against 1 / (2 beta) = 1.
  CHECK(item(dpo(policy, reference, {DpoLoss::kIpo, 0.5}).loss) == Approx(0.0625));
  const double eps = 0.1;
  CHECK(item(dpo(policy, reference, {DpoLoss::kRobust, 0.5, eps}).loss) ==
        Approx((-(1 - eps) * log_sigmoid(1.0) + eps * log_sigmoid(-1.0)) / (1 - 2 * eps)));
}

TEST_CASE("preference: DPO's gradient reaches the policy only", "[train][preference]") {
  const auto chosen = values({-5.0}).requires_grad_(true);
  const auto rejected = values({-7.0}).requires_grad_(true);
  const auto ref_chosen = values({-6.0}).requires_grad_(true);
  const PairLogps policy{{chosen, values({1})}, {rejected, values({1})}};
  const PairLogps reference{{ref_chosen, values({1})}, {values({-6.0}), values({1})}};
  dpo(policy, reference, {DpoLoss::kSigmoid, 0.5}).loss.backward();
  // d/dc -log sigma(beta delta) = -beta sigma(-beta delta), delta = 2.
  const double expected = -0.5 / (1 + std::exp(1.0));
  CHECK(item(chosen.grad()[0]) == Approx(expected));
  CHECK(item(rejected.grad()[0]) == Approx(-expected));
  CHECK_FALSE(ref_chosen.grad().defined());
}

TEST_CASE("preference: SimPO and ORPO on length-averaged log-probs", "[train][preference]") {
  const PairLogps policy = pair({-5}, {-7}, {2}, {4});  // averages -2.5 and -1.75
  const PreferenceTerms s = simpo(policy, {2.0, 0.5});
  CHECK(item(s.loss) == Approx(-log_sigmoid(2.0 * (-0.75) - 0.5)));
  CHECK(item(s.chosen_rewards[0]) == Approx(-5.0));
  CHECK(item(s.rejected_rewards[0]) == Approx(-3.5));
  CHECK(item(s.chosen_logps[0]) == Approx(-2.5));
  const double eps = 0.2, z = 2.0 * (-0.75) - 0.5;
  CHECK(item(simpo(policy, {2.0, 0.5, eps}).loss) == Approx(-(1 - eps) * log_sigmoid(z) - eps * log_sigmoid(-z)));
  CHECK(item(simpo(policy, {2.0, 0.5, 0.0, 1.0}, values({0.3}).squeeze()).loss) == Approx(-log_sigmoid(z) + 0.3));
  CHECK_THROWS(simpo(policy, {2.0, 0.5, 0.0, 1.0}));  // CPO's term without the cross-entropy

  // ORPO: chosen average -0.5 (log1mexp's expm1 side of -ln 2), rejected -1.5 (its log1p side).
  const PairLogps odds = pair({-0.5}, {-1.5});
  const double a = -0.5, b = -1.5;
  const double log_odds = (a - b) - (std::log(1 - std::exp(a)) - std::log(1 - std::exp(b)));
  const OrpoTerms o = orpo(odds, values({2.0}).squeeze(), 0.1);
  CHECK(item(o.log_odds[0]) == Approx(log_odds).epsilon(1e-12));
  CHECK(item(o.loss) == Approx(2.0 - 0.1 * log_sigmoid(log_odds)));
  CHECK(item(o.log_odds_ratio[0]) == Approx(log_sigmoid(log_odds)));
  CHECK(item(o.chosen_rewards[0]) == Approx(0.1 * a));
}

TEST_CASE("preference: KTO's rows against the KL point, weighted by class", "[train][preference]") {
  const auto desirable = torch::tensor({true, false});
  // The start: every row's loss is 1/2.
  CHECK(item(kto(values({-1, -2}), values({-1, -2}), desirable, values({0.0}).squeeze(), {}).loss) == Approx(0.5));
  const auto sigmoid = [](double x) { return 1 / (1 + std::exp(-x)); };
  const KtoTerms k = kto(values({-1, -2}), values({-2, -1}), desirable, values({0.3}).squeeze(), {0.5, 1.0, 2.0});
  CHECK(item(k.loss) == Approx(((1 - sigmoid(0.5 * 0.7)) + 2 * (1 - sigmoid(0.5 * 1.3))) / 2));
  CHECK(item(k.rewards[0]) == Approx(0.5));
  CHECK(item(k.rewards[1]) == Approx(-0.5));
  // The KL point: the mean of policy minus reference over the mismatched rows, never below 0.
  CHECK(item(kto_kl(values({-3, -1}), values({-2, -1}))) == Approx(-0.5));
  CHECK(item(kto_kl_point(values({-0.5}).squeeze())) == 0.0);
  CHECK(item(kto_kl_point(values({0.25}).squeeze())) == 0.25);
}

TEST_CASE("preference: a reward model's Bradley-Terry loss, margin and centring", "[train][preference]") {
  const auto chosen = values({2, 0}), rejected = values({1, 1});
  const RewardTerms r = bradley_terry(chosen, rejected);
  CHECK(item(r.loss) == Approx((-log_sigmoid(1.0) - log_sigmoid(-1.0)) / 2));
  CHECK(r.accuracy.equal(values({1, 0})));
  CHECK(r.margin.equal(values({1, -1})));
  CHECK(item(bradley_terry(chosen, rejected, values({0.5, 0.5})).loss) ==
        Approx((-log_sigmoid(0.5) - log_sigmoid(-1.5)) / 2));
  CHECK(item(bradley_terry(chosen, rejected, std::nullopt, 0.01).loss) ==
        Approx((-log_sigmoid(1.0) - log_sigmoid(-1.0)) / 2 + 0.01 * (9 + 1) / 2.0));
}

TEST_CASE("reward: each row's score at its last token that is not the padding id, as transformers reads it",
          "[train][preference]") {
  const auto scores = torch::arange(12, torch::kFloat).view({3, 4, 1});  // row r position t: 4r + t
  // pad 9: row 0 is whole, row 1 ends in padding, row 2 ends with an EOS equal to the padding id
  // (GPT-2 without a pad token), which transformers skips, and holds a pad id inside, which it does not.
  const auto ids = torch::tensor({{5, 6, 7, 8}, {5, 6, 9, 9}, {5, 9, 7, 9}}, torch::kLong);
  const auto got = hftrain::train::last_token_scores(scores, ids, 9);
  CHECK(got.dtype() == torch::kFloat);
  CHECK(got[0].item<float>() == 3);
  CHECK(got[1].item<float>() == 5);
  CHECK(got[2].item<float>() == 10);
  // A row of padding alone reads position 0 (argmax of all zeros), as transformers does.
  CHECK(hftrain::train::last_token_scores(scores.narrow(0, 0, 1), torch::full({1, 4}, 9, torch::kLong), 9)
            .item<float>() == 0);
}
