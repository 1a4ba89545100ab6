#include "parallel/data_parallel/optimizer_pieces.h"

#include <torch/torch.h>

namespace hftrain::parallel {

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

}  // namespace hftrain::parallel
