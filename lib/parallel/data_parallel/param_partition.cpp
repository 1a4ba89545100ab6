#include "parallel/data_parallel/param_partition.h"

#include <algorithm>
#include <numeric>

namespace hftrain::parallel {

std::vector<int> partition_by_size(const std::vector<int64_t>& numels, int ranks) {
  std::vector<size_t> order(numels.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return numels[a] > numels[b]; });
  std::vector<int64_t> load(static_cast<size_t>(std::max(1, ranks)), 0);
  std::vector<int> owner(numels.size(), 0);
  for (size_t i : order) {
    const auto least = std::min_element(load.begin(), load.end());  // the first of equals
    owner[i] = static_cast<int>(least - load.begin());
    *least += numels[i];
  }
  return owner;
}

optim::OptimizerState only_owned(optim::OptimizerState state, const std::set<std::string>& owned) {
  auto param_of = [](const std::string& key) { return key.substr(0, key.rfind('/')); };
  std::erase_if(state.tensors, [&](const auto& entry) { return !owned.count(param_of(entry.first)); });
  if (state.meta.is_object() && state.meta.contains("steps") && state.meta["steps"].is_object()) {
    nlohmann::json steps = nlohmann::json::object();
    for (const auto& [name, step] : state.meta["steps"].items()) {
      if (owned.count(name)) steps[name] = step;
    }
    state.meta["steps"] = std::move(steps);
  }
  return state;
}

}  // namespace hftrain::parallel
