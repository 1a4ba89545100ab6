// The task a preference objective trains (preference.objective): the policy, a decoder's TaskModel,
// scored on each batch's 2B rows (data/preference.h: B chosen rows, then B rejected ones) and trained
// on one of the objectives of objectives.h, against a reference where the objective has one (DPO).
// Everything else (parameters, weights, saving, parallelism) is the policy's: the result is the
// policy, saved and exported as any decoder.
#pragma once

#include <memory>

#include "config/config.h"
#include "train/preference/objectives.h"
#include "train/task/task_model.h"

namespace hftrain::train {

// The reference's log-probabilities of a batch's rows, without a graph.
class PreferenceReference {
 public:
  virtual ~PreferenceReference() = default;
  virtual preference::SequenceLogps logps(const data::Batch& batch) = 0;
  // Parameters it holds besides the policy's (a frozen copy's), for the memory report; 0 when none.
  virtual int64_t parameters() const { return 0; }
};

// A frozen copy of the policy's weights as they are now (the starting model), in evaluation mode.
std::unique_ptr<PreferenceReference> frozen_copy_reference(const TaskModel& policy, const model::ModelSpec& spec,
                                                           const torch::Device& device);
// The policy itself with its LoRA adapters off (model::AdaptersOff): the base model, no second copy;
// with `continued`, the policy's trained parameters (an adapter continued from peft.from, whose
// starting values are not the base) are kept as they are now and swapped in for each reference
// forward instead: the starting model, as TRL's "ref" adapter is, at the adapters' size.
std::unique_ptr<PreferenceReference> adapters_off_reference(TaskModel& policy, bool continued = false);

// The policy wrapped by the objective `config` names; `reference` for DPO (null for SimPO and ORPO).
std::unique_ptr<TaskModel> make_preference_task(std::unique_ptr<TaskModel> policy,
                                                const config::PreferenceConfig& config,
                                                std::unique_ptr<PreferenceReference> reference);

}  // namespace hftrain::train
