// A reward model (preference.objective=reward): a decoder whose output layer is a one-output score
// head (ModelSpec::score_outputs), scored on each batch's 2B rows (data/preference.h: B chosen rows,
// then B rejected ones) at each row's last token that is not padding, as transformers'
// *ForSequenceClassification reads it, and trained with the Bradley-Terry loss (objectives.h) as
// TRL's RewardTrainer trains it. Its window figures are TRL's: accuracy, margin, mean_reward.
#pragma once

#include <memory>

#include "config/config.h"
#include "train/task/task_model.h"

namespace hftrain::train {

// `scorer`: the decoder with its score head; `pad_id`: the padding id the rows are padded with, which
// the export's config.json names as pad_token_id (transformers finds the last token by it).
std::unique_ptr<TaskModel> make_reward_task(std::unique_ptr<TaskModel> scorer, const config::PreferenceConfig& config,
                                            int64_t pad_id);

// Each row's score at its last token whose id is not `pad_id` (transformers' rule: the last such
// position; the first position when the row is all padding): scores (R, T, 1) -> (R).
torch::Tensor last_token_scores(const torch::Tensor& scores, const torch::Tensor& input_ids, int64_t pad_id);

}  // namespace hftrain::train
