// KTO (preference.objective=kto): the policy trained on unpaired examples (data/kto.h: B example rows,
// then B KL rows pairing each prompt with another example's completion) as TRL's KTOTrainer trains it:
// the KL point is the mean over the micro-batch's KL rows of the policy's minus the reference's
// log-probs, averaged over the data-parallel ranks and clamped at 0, without a graph; each example's
// loss is 1 - sigma(beta (s - kl)) when desirable and 1 - sigma(beta (kl - s)) when not (s its log-ratio
// to the reference), weighted by its class, and the loss is their mean. Figures under TRL's names:
// rewards/chosen and logps/chosen over the desirable examples, rewards/rejected and logps/rejected over
// the undesirable ones, rewards/margins (their difference), kl.
#pragma once

#include <functional>
#include <memory>

#include "config/config.h"
#include "train/preference/preference_task.h"

namespace hftrain::train {

// `mean_over_ranks`: the mean of a scalar over the data-parallel ranks (every rank calls it once per
// forward); identity on one rank.
std::unique_ptr<TaskModel> make_kto_task(std::unique_ptr<TaskModel> policy, const config::PreferenceConfig& config,
                                         std::unique_ptr<PreferenceReference> reference,
                                         std::function<torch::Tensor(const torch::Tensor&)> mean_over_ranks);

}  // namespace hftrain::train
