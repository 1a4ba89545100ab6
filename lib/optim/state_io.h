// The part of OptimizerState export and import that every optimizer in this folder shares: the
// common meta fields, and the checks load_state() makes (all of them before anything changes, so
// that a bad state leaves the optimizer as it was).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "optim/optimizer.h"

namespace hftrain::optim::detail {

inline constexpr int kStateFormat = 1;

// One tensor a parameter's state must hold once the parameter has state.
struct TensorSpec {
  std::string key;  // e.g. "exp_avg"
  std::vector<int64_t> shape;
  torch::ScalarType dtype;  // what the optimizer keeps it in
};

// {"optimizer", "format", "groups"}; the optimizer adds "steps" and "hyperparameters".
nlohmann::json base_meta(std::string_view optimizer, const std::vector<ParamGroup>& groups);

// Appends "<name>/<key>" -> t when t is defined.
void add_tensor(OptimizerState& state, const std::string& name, const char* key,
                const torch::Tensor& t);

// meta "steps" of an optimizer that counts steps per parameter. `states` runs parallel to the
// groups' names (group order, then parameter order); visit(name, state) adds that parameter's
// tensors (add_tensor) and returns its step count, or nullopt when it has no state yet.
template <class State, class Visit>
nlohmann::json export_param_states(const std::vector<ParamGroup>& groups, const std::vector<State>& states,
                                   Visit visit) {
  nlohmann::json steps = nlohmann::json::object();
  size_t k = 0;
  for (const auto& g : groups) {
    for (const auto& name : g.names) {
      if (const std::optional<int64_t> step = visit(name, states[k++])) steps[name] = *step;
    }
  }
  return steps;
}

// One parameter's state, checked and copied (never aliased) onto the parameter's device.
struct LoadedParam {
  bool has_state = false;
  int64_t step = 0;                    // >= 1 when counted and has_state
  std::vector<torch::Tensor> tensors;  // parallel to the parameter's specs
};

struct StateLayout {
  std::string_view optimizer;  // must equal meta["optimizer"]
  bool counts_steps = false;   // meta["steps"] says which parameters have state, and their counts
  // The tensors of the parameter `param` of group `group`, the `index`th in group order, once it
  // has state (empty: never any).
  std::function<std::vector<TensorSpec>(size_t group, size_t index, const torch::Tensor& param)> specs;
};

// Checks `state` against `groups` and `layout` and copies its tensors; one entry per parameter in
// group order. Throws util::CheckpointError naming the first thing that does not match.
std::vector<LoadedParam> check_and_copy(const OptimizerState& state,
                                        const std::vector<ParamGroup>& groups,
                                        const StateLayout& layout);

}  // namespace hftrain::optim::detail
