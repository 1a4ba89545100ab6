// Pipeline parallelism's part of a checkpoint's optimizer state: the groups of every stage merged,
// and a saved state seen by one stage.
#include "parallel/seam/stage_optimizer.h"

#include <set>

#include "parallel/comm/communicator.h"

namespace hftrain::parallel {
namespace {

class StageState final : public FilteredOptimizerState {
 public:
  StageState(const SavedOptimizerState& saved, const std::vector<std::string>& params)
      : FilteredOptimizerState(saved) {
    const std::set<std::string> keep(params.begin(), params.end());
    for (const std::string& name : saved.names()) {
      if (keep.count(name.substr(0, name.rfind('/')))) names_.push_back(name);
    }
    // The optimizer's groups list every stage's parameters (pipeline_optimizer_meta): this stage's.
    if (meta_.is_object() && meta_.contains("groups") && meta_["groups"].is_array()) {
      for (auto& group : meta_["groups"]) {
        if (!group.is_object() || !group.contains("params") || !group["params"].is_array()) continue;
        nlohmann::json kept = nlohmann::json::array();
        for (const auto& name : group["params"]) {
          if (name.is_string() && keep.count(name.get<std::string>())) kept.push_back(name);
        }
        group["params"] = std::move(kept);
      }
    }
    if (meta_.is_object() && meta_.contains("steps") && meta_["steps"].is_object()) {
      nlohmann::json steps = nlohmann::json::object();
      for (const auto& [name, count] : meta_["steps"].items()) {
        if (keep.count(name)) steps[name] = count;
      }
      meta_["steps"] = std::move(steps);
    }
  }
};

}  // namespace

nlohmann::json pipeline_optimizer_meta(const nlohmann::json& meta, Communicator& pipeline,
                                       const torch::Device& device) {
  const std::vector<std::string> all = all_gather_text(pipeline, meta.dump(), device);
  nlohmann::json merged = meta;
  if (!merged.is_object() || !merged.contains("groups") || !merged["groups"].is_array()) return merged;
  // Each stage numbers its groups by the order its own parameters meet them: the groups are
  // matched by their settings (a group's schedule-free state, when there is one, goes with it).
  const bool schedule_free = merged.contains("schedule_free") && merged["schedule_free"].is_array();
  nlohmann::json groups = nlohmann::json::array(), free_state = nlohmann::json::array();
  for (const std::string& text : all) {  // in stage order: the whole model's order within a group
    const nlohmann::json stage = nlohmann::json::parse(text);
    const nlohmann::json& stage_groups = stage.at("groups");
    for (size_t g = 0; g < stage_groups.size(); ++g) {
      const nlohmann::json& group = stage_groups[g];
      size_t at = groups.size();
      for (size_t k = 0; k < groups.size(); ++k) {
        if (groups[k].at("base_lr") == group.at("base_lr") &&
            groups[k].at("weight_decay") == group.at("weight_decay")) {
          at = k;
        }
      }
      if (at == groups.size()) {
        nlohmann::json fresh = group;
        fresh["params"] = nlohmann::json::array();
        groups.push_back(std::move(fresh));
        if (schedule_free) free_state.push_back(stage.at("schedule_free").at(g));
      }
      for (const auto& name : group.at("params")) groups[at]["params"].push_back(name);
    }
  }
  merged["groups"] = std::move(groups);
  if (schedule_free) merged["schedule_free"] = std::move(free_state);
  return merged;
}

std::unique_ptr<SavedOptimizerState> stage_optimizer_state(const SavedOptimizerState& saved,
                                                                     const std::vector<std::string>& params) {
  return std::make_unique<StageState>(saved, params);
}

}  // namespace hftrain::parallel
