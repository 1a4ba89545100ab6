// Tensor parallelism's group over a Communicator (the model's TpGroup, model/decoder/tensor_parallel.h),
// and the pieces of a checkpoint that it moves: every rank's parameters put back together whole
// for a save (and taken apart again after a load), and the optimizer state the same way.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "model/decoder/tensor_parallel.h"
#include "model/decoder/tp_plan.h"
#include "parallel/comm/communicator.h"
#include "parallel/data_parallel/optimizer_pieces.h"

namespace hftrain::parallel {

// The collectives of `comm` (the world's tensor-parallel group) as the model's layers call them.
std::shared_ptr<model::TpGroup> make_tp_group(Communicator& comm, bool sequence_parallel);

// Where rank r's piece of parameter `name` lies in the whole parameter.
using SplitOf = std::function<model::TpSplit(const std::string& name, int rank)>;

// Within its scope every split parameter holds the whole tensor: for a save gathered from the
// group's pieces (collective; through `device`, the group's, where a parameter is elsewhere, as
// zero3's host copies), for a load uninitialised until the load fills it, after which this rank's
// piece is copied back into the storage the parameter had. Parameters that are whole on every rank
// are left alone.
class TpWholeParameters {
 public:
  enum class Access { kSave, kLoad };
  TpWholeParameters(std::vector<std::pair<std::string, torch::Tensor>> params, SplitOf split_of,
                    model::TpGroup& group, Access access, const torch::Device& device);
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

// This rank's optimizer state as a tensor-parallel checkpoint holds it, every rank writing its own
// pieces: the state of a split parameter as "<parameter>@tp<r>/<key>", shaped as rank r's piece
// (whole under ddp, flat ranges of it under zero); the state of a parameter every rank holds whole
// written by the group's rank 0 alone; one set of shard files per tensor-parallel rank. Where the
// pieces lie in the whole tensors is tp_layout_record's.
LocalOptimizerState tp_optimizer_pieces(LocalOptimizerState local, const SplitOf& split_of, int tp_rank, int tp_size);
// tensor_parallel.json of a checkpoint: the group's size and every split parameter's splits by rank.
nlohmann::json tp_layout_record(const std::vector<std::pair<std::string, torch::Tensor>>& params,
                                const SplitOf& split_of, int tp_size);
// A saved state of tp_optimizer_pieces' names read as whole tensors: each tensor of a split
// parameter put together from the ranks' pieces as `record` (tp_layout_record) places them, one
// tensor at a time in host memory. Throws util::CheckpointError naming `record_file` when the
// record does not fit the state.
std::unique_ptr<SavedOptimizerState> assembled_optimizer_state(const SavedOptimizerState& saved,
                                                               const nlohmann::json& record,
                                                               const std::string& record_file);

// A saved (whole) optimizer state as this rank's pieces see it: the tensors of split parameters
// shaped and read as the pieces.
std::unique_ptr<SavedOptimizerState> sliced_optimizer_state(const SavedOptimizerState& whole, SplitOf split_of,
                                                            int rank);

}  // namespace hftrain::parallel
