// Tensor parallelism's group over a Communicator (the model's TpGroup, model/tensor_parallel.h),
// and the pieces of a checkpoint that it moves: every rank's parameters put back together whole
// for a save (and taken apart again after a load), and the optimizer state the same way.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "model/tensor_parallel.h"
#include "model/tp_plan.h"
#include "parallel/comm/communicator.h"
#include "parallel/data_parallel/optimizer_pieces.h"

namespace hftrain::parallel {

// The collectives of `comm` (the world's tensor-parallel group) as the model's layers call them.
std::shared_ptr<model::TpGroup> make_tp_group(Communicator& comm, bool sequence_parallel);

// Where rank r's piece of parameter `name` lies in the whole parameter.
using SplitOf = std::function<model::TpSplit(const std::string& name, int rank)>;

// Within its scope every split parameter holds the whole tensor: for a save gathered from the
// group's pieces (collective), for a load uninitialised until the load fills it, after which this
// rank's piece is taken back. Parameters that are whole on every rank are left alone.
class TpWholeParameters {
 public:
  enum class Access { kSave, kLoad };
  TpWholeParameters(std::vector<std::pair<std::string, torch::Tensor>> params, SplitOf split_of,
                    model::TpGroup& group, Access access);
  ~TpWholeParameters();
  TpWholeParameters(const TpWholeParameters&) = delete;
  TpWholeParameters& operator=(const TpWholeParameters&) = delete;

 private:
  struct Swapped {
    torch::Tensor param;
    torch::Tensor piece;
    model::TpSplit split;
  };
  std::vector<Swapped> swapped_;
  Access access_;
};

// The optimizer state of a replicated strategy (whole tensors of this rank's pieces) made whole
// over the group (collective): state tensors shaped as their parameter's piece are gathered, and
// only the group's rank 0 writes. Throws util::ConfigError naming the optimizer state that is not
// element-wise (it cannot be put together from the pieces).
LocalOptimizerState gather_optimizer_state(LocalOptimizerState local, const SplitOf& split_of,
                                           const std::vector<std::pair<std::string, torch::Tensor>>& params,
                                           model::TpGroup& group);

// A saved (whole) optimizer state as this rank's pieces see it: the tensors of split parameters
// shaped and read as the pieces.
std::unique_ptr<SavedOptimizerState> sliced_optimizer_state(const SavedOptimizerState& whole, SplitOf split_of,
                                                            int rank);

}  // namespace hftrain::parallel
