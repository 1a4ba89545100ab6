#include "parallel/data_parallel/optimizer_pieces.h"

#include <torch/torch.h>

namespace hftrain::parallel {
namespace {

bool has_key(const std::string& name, const std::string& key) {
  const size_t slash = name.rfind('/');
  return slash != std::string::npos && name.compare(slash + 1, std::string::npos, key) == 0;
}

class WithoutKey final : public FilteredOptimizerState {
 public:
  WithoutKey(const SavedOptimizerState& saved, const std::string& key) : FilteredOptimizerState(saved) {
    for (const std::string& name : saved.names()) {
      if (!has_key(name, key)) names_.push_back(name);
    }
    if (meta_.is_object()) meta_.erase(key);  // the key's own meta record, if it keeps one
  }
};

}  // namespace

optim::OptimizerState read_whole_state(const SavedOptimizerState& saved) {
  optim::OptimizerState state;
  state.meta = saved.meta();
  for (const auto& name : saved.names()) {
    const std::vector<int64_t> shape = saved.shape(name);
    int64_t numel = 1;
    for (int64_t d : shape) numel *= d;
    state.tensors.emplace_back(name, saved.read(name, 0, numel).view(shape));
  }
  return state;
}

bool has_state_key(const SavedOptimizerState& saved, const std::string& key) {
  for (const std::string& name : saved.names()) {
    if (has_key(name, key)) return true;
  }
  return false;
}

std::unique_ptr<SavedOptimizerState> without_state_key(const SavedOptimizerState& saved, const std::string& key) {
  return std::make_unique<WithoutKey>(saved, key);
}

}  // namespace hftrain::parallel
