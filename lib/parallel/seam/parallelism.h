// The one place where the training loop meets parallelism. Whatever the layout (one process;
// data-parallel ranks under any strategy; tensor-parallel groups; pipeline stages; their
// compositions), the loop asks this object for the same things and never branches on the layout:
//   - a step's figures over the ranks that hold parts of them: the target count and the losses
//     (data-parallel ranks; the pipeline's last stage), the gradient's norm and overflow (the
//     strategy's shards, the pipeline's stages, the tensor-parallel pieces) and a value every rank
//     must agree on;
//   - the one scope in which the whole model is present, for saves, exports and loads;
//   - each rank's pieces of the optimizer state, for a checkpoint and back.
// The pipeline's own part (its stages' parameters, which the training library moves) comes in as
// `Stages`; everything else is built here from the world and the strategy.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include "config/config.h"
#include "model/decoder/tensor_parallel.h"
#include "parallel/comm/world.h"
#include "parallel/data_parallel/optimizer_pieces.h"
#include "parallel/data_parallel/strategy.h"
#include "parallel/plan/memory_plan.h"
#include "parallel/tensor/tp_group.h"

namespace hftrain::parallel {

using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;

// Something made whole for a scope, undone at its end.
class ScopeGuard {
 public:
  virtual ~ScopeGuard() = default;
};

class Parallelism {
 public:
  using Access = ShardingStrategy::WholeAccess;
  // Pipeline parallelism's part: every stage's parameters present for a scope (a save: on the main
  // rank; a load: on every rank), and the memory report's clause on this rank's stage.
  struct Stages {
    std::function<std::unique_ptr<ScopeGuard>(Access)> whole;
    std::string memory_clause;
  };
  // `parameters`: the model's (this rank's stage's) parameters by name, when asked.
  // `split`: where each parameter's tensor-parallel piece lies (with tensor parallelism).
  // `stages`: with pipeline parallelism.
  Parallelism(World& world, ShardingStrategy& strategy, const torch::Device& device,
              std::function<NamedTensors()> parameters, SplitOf split, std::optional<Stages> stages,
              bool sequence_parallel);
  Parallelism(const Parallelism&) = delete;
  Parallelism& operator=(const Parallelism&) = delete;

  World& world() { return world_; }
  ShardingStrategy& strategy() { return strategy_; }
  // The model's tensor-parallel group (for its layers); null without tensor parallelism.
  const std::shared_ptr<model::TpGroup>& tp_group() const { return tp_group_; }

  // --- A step's figures ---
  // The step's target count over the data-parallel ranks (a tensor-parallel group shares its
  // batches), as an fp32 device scalar of at least 1, without a host read; undefined on one
  // data-parallel rank, where the local count is the global one.
  torch::Tensor global_targets(int64_t local) const;
  // `loss_sum` (a device scalar) summed in place over the ranks holding parts of the step's loss:
  // the data-parallel ranks and the pipeline's stages (the last one holds them).
  void sum_loss(torch::Tensor& loss_sum) const;
  // A host count summed over the data-parallel ranks.
  int64_t sum_targets(int64_t local) const;
  // Over every rank holding a piece of the gradients (the strategy's shards, the pipeline's
  // stages, the tensor-parallel pieces): the sum (squared norms) and the max (overflow flags).
  // Empty where this rank holds all of them.
  const std::function<void(torch::Tensor&)>& sum_gradient_pieces() const { return sum_pieces_; }
  const std::function<void(torch::Tensor&)>& max_gradient_pieces() const { return max_pieces_; }
  // The weights of the squared gradient norm, one per tensor of the strategy's grads() (tensor
  // parallelism: a parameter every rank holds whole counts 1/tp); empty: all 1. Made at the first
  // call, after the first backward.
  const std::vector<torch::Tensor>& norm_weights();
  // A host value reduced over every rank (no-op on one).
  int64_t agree(int64_t value, ReduceOp op) const;

  // --- The whole model ---
  // Every parameter whole for the scope, in the order: the strategy's shards (zero3's units),
  // tensor parallelism's pieces, the pipeline's stages. A save (collective): the main rank holds
  // the whole model (zero3: host copies of each unit), and tensor-parallel groups check that their
  // replicated parameters still agree; a load: every rank holds every parameter to be filled, and
  // keeps its own part of it at the end. Null where nothing has to be made whole.
  std::unique_ptr<ScopeGuard> whole_model(Access access, int64_t step);

  // --- The optimizer's pieces ---
  // What this rank saves of the optimizer state: its pieces of the whole tensors, which shard file
  // they go to, and the groups as every stage names them (collective over the pipeline).
  LocalOptimizerState optimizer_pieces_to_save();
  // Loads a saved optimizer state written under any layout, each rank reading its own pieces.
  // `tp_record`: the checkpoint's tensor_parallel.json when it has one (and its path, for messages).
  void load_optimizer_state(const SavedOptimizerState& saved, const std::optional<nlohmann::json>& tp_record,
                            const std::string& tp_record_file);
  // What a checkpoint records of the tensor-parallel layout (tensor_parallel.json); none without it.
  std::optional<nlohmann::json> tp_layout_record();
  // After a resume: a tensor-parallel group's default generators set from its rank 0's, so that
  // the regions it computes whole draw alike (collective over the group; nothing without it).
  void share_default_generators();

  // The memory this rank holds beside the formulas (one log line after the first step).
  // `parameters`: what the formulas count (a LoRA run: what trains); `units`: zero3's units.
  std::string memory_report(const NamedTensors& parameters, UnitSizes units) const;

 private:
  // Warns when a tensor-parallel group's copies of the parameters it holds whole differ.
  void check_replicas_agree(int64_t step);
  std::string tp_memory_share() const;

  World& world_;
  ShardingStrategy& strategy_;
  torch::Device device_;
  std::function<NamedTensors()> parameters_;
  SplitOf split_;
  std::optional<Stages> stages_;
  std::shared_ptr<model::TpGroup> tp_group_;
  std::function<void(torch::Tensor&)> sum_pieces_, max_pieces_;
  std::vector<torch::Tensor> norm_weights_;
  bool norm_weights_made_ = false;
};

}  // namespace hftrain::parallel
