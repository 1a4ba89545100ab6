#include "train/preference/reward_task.h"

#include <torch/torch.h>

#include "train/preference/objectives.h"
#include "train/task/task_decorator.h"

namespace hftrain::train {

torch::Tensor last_token_scores(const torch::Tensor& scores, const torch::Tensor& input_ids, int64_t pad_id) {
  const int64_t T = input_ids.size(1);
  const torch::Tensor positions = torch::arange(T, input_ids.options());
  const torch::Tensor last = (positions * input_ids.ne(pad_id).to(input_ids.scalar_type())).argmax(-1);
  const torch::Tensor rows = torch::arange(input_ids.size(0), input_ids.options());
  return scores.index({rows, last, 0}).to(torch::kFloat32);
}

namespace {

class RewardTask final : public TaskDecorator {
 public:
  RewardTask(std::unique_ptr<TaskModel> scorer, const config::PreferenceConfig& config, int64_t pad_id)
      : TaskDecorator(std::move(scorer)), config_(config), pad_id_(pad_id) {}

  torch::Tensor loss_sum(const data::Batch& batch, double /*label_smoothing*/, torch::Tensor* logits_out) override {
    const int64_t pairs = batch.input_ids.size(0) / 2;
    const torch::Tensor scores = inner().logits(batch);  // (2B, T, 1)
    if (logits_out) *logits_out = scores;
    const torch::Tensor both = last_token_scores(scores, batch.input_ids, pad_id_);
    torch::Tensor chosen = both.narrow(0, 0, pairs), rejected = both.narrow(0, pairs, pairs);
    torch::Tensor margin = batch.margins;
    // Pairs past the end of an evaluation pass carry no labels (the loader masks them): left out.
    if (batch.num_target_tokens < pairs) {
      const torch::Tensor keep = batch.labels.narrow(0, 0, pairs).ne(data::kIgnoreIndex).any(1).nonzero().view({-1});
      if (keep.size(0) == 0) return scores.sum() * 0;  // keeps the graph connected
      chosen = chosen.index_select(0, keep);
      rejected = rejected.index_select(0, keep);
      if (margin.defined()) margin = margin.index_select(0, keep);
    }
    const int64_t kept = chosen.size(0);
    std::optional<torch::Tensor> margins;
    if (margin.defined()) margins = margin;
    std::optional<double> center;
    if (config_.center_coefficient > 0) center = config_.center_coefficient;
    const preference::RewardTerms terms = preference::bradley_terry(chosen, rejected, margins, center);
    // TRL's figures per pair: accuracy, margin, and the mean of the pair's two rewards.
    const torch::Tensor mean_reward = (chosen.detach() + rejected.detach()) / 2;
    std::vector<torch::Tensor> sums{terms.accuracy.sum(), terms.margin.sum(), mean_reward.sum()};
    for (auto& s : sums) s = s.to(torch::kFloat64);
    sums.push_back(torch::full({}, static_cast<double>(kept), sums[0].options()));
    window_.add(torch::stack(sums));
    return terms.loss * static_cast<double>(kept);
  }

  std::vector<std::string> window_metric_names() const override { return {"accuracy", "margin", "mean_reward"}; }
  torch::Tensor take_window_sums(bool evaluation) override { return window_.take(evaluation); }

 private:
  config::PreferenceConfig config_;
  int64_t pad_id_;
  WindowSums window_;
};

}  // namespace

std::unique_ptr<TaskModel> make_reward_task(std::unique_ptr<TaskModel> scorer, const config::PreferenceConfig& config,
                                            int64_t pad_id) {
  return std::make_unique<RewardTask>(std::move(scorer), config, pad_id);
}

}  // namespace hftrain::train
