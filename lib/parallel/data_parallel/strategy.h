// The sharding strategy (distributed.strategy) as the training loop drives it, one step at a
// time: before_backward() for each micro-batch, after_backward() once, then grads() to unscale
// and clip, step(), zero_grad(). The strategy owns the optimizer, since under ZeRO each rank's
// optimizer holds only its shard.
//
//   single  one process: the optimizer over the parameters, nothing communicated
//   ddp     gradients all-reduced in buckets during the last backward; every rank steps alike
//   zero1   as ddp, then each rank updates only its chunk of every bucket (optimizer state 1/N)
//           and the updated parameters are all-gathered
//   zero2   gradients reduce-scattered: each rank receives only its chunk (gradients 1/N between
//           steps), then as zero1
//   zero3   the parameters sharded too, per unit (transformer block): gathered before the unit's
//           forward and again before its backward, freed after each, the next unit prefetched;
//           gradients reduce-scattered as each unit's backward ends (zero3.h)
//   hybrid  zero3 inside a node, replicated across nodes (the shard chunks all-reduced between
//           the nodes' ranks of the same local rank)
// distributed.cpu_offload keeps the optimizer state (and under zero3 the master shards) in CPU
// memory, pinned on GPUs; the update runs there.
// Parameters are fp32 masters on every rank (autocast computes in bf16/fp16), so the memory
// follows the fp32 column of the ZeRO formulas (memory_plan.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include "config/config.h"
#include "parallel/data_parallel/optimizer_pieces.h"
#include "parallel/comm/world.h"
#include "model/parameter_units.h"
#include "optim/optimizer.h"

namespace hftrain::parallel {

// Bytes this rank holds, for the start-up report and the memory-plan checks.
struct MemoryReport {
  int64_t parameters = 0;
  int64_t gradients = 0;        // held between backward and step
  int64_t optimizer_state = 0;  // after the first step (Adam: 2 tensors per element)
  int64_t buffers = 0;          // bucket and gather buffers
  int64_t host = 0;             // of the above, bytes in CPU memory (distributed.cpu_offload)
};

// What a strategy is built from: the distributed.* settings, the dtypes of its reductions and of
// the parameters, and the optimizer, made by the caller's factory over what this rank steps (the
// training stage's; it knows the optimizer's config and, under pipeline parallelism, the stage's
// parameter groups).
struct StrategyOptions {
  config::DistributedConfig distributed;
  torch::ScalarType reduce_dtype = torch::kFloat32;  // of the gradient reductions
  bool bf16_params = false;                          // trainer.param_dtype=bf16
  optim::StateBlocks state_blocks;                   // how the optimizer's state follows pieces
  // Why the optimizer's state needs whole weight matrices ("adafactor factors whole weight
  // matrices"), or empty when pieces do.
  std::string whole_state;
  // The optimizer over `params`; `whole_numels`: parallel to them when they are pieces, the element
  // count of the parameter each is a piece of (empty otherwise).
  std::function<std::unique_ptr<optim::Optimizer>(const optim::NamedParams& params,
                                                  const std::vector<int64_t>& whole_numels)>
      make_optimizer;
  // The optimizer make_optimizer builds, for the memory formula (its state bytes per parameter),
  // and whether it keeps EMA weights beside its own state (trainer.ema.enabled).
  config::OptimizerConfig optimizer;
  bool ema_weights = false;
};

class ShardingStrategy {
 public:
  virtual ~ShardingStrategy() = default;

  // Builds the strategy named by options.distributed (single when the world has one rank).
  // Throws ConfigError for combinations it does not support, with a hint.
  // `units`: the model's parameter units (model/parameter_units.h), which zero3 and hybrid shard
  // one by one.
  static std::unique_ptr<ShardingStrategy> create(World& world, const StrategyOptions& options,
                                                  const optim::NamedParams& params, const model::ParameterUnits& units);

  virtual std::string name() const = 0;
  // Before a micro-batch's backward; `last`: the last of the step, whose backward reduces.
  virtual void before_backward(bool last) = 0;
  // After the last backward: the reduction is complete.
  virtual void after_backward() = 0;
  // The gradients this rank steps with: every parameter's, or its shard's.
  virtual std::vector<torch::Tensor> grads() = 0;
  // Weights of the squared gradient norm, one per tensor of grads() (a scalar, or a tensor of its
  // shape), from one weight per parameter (in the order the strategy was given them): tensor
  // parallelism counts a parameter every rank of the group holds whole once over the group.
  virtual std::vector<torch::Tensor> norm_weights(const std::vector<double>& per_parameter) = 0;
  // Non-null when grads() is a shard: norms and inf checks must be summed over this communicator.
  virtual Communicator* shard_comm() = 0;
  // The update (and for zero, the all-gather of the updated parameters).
  virtual void step() = 0;
  virtual void zero_grad() = 0;
  virtual optim::Optimizer& optimizer() = 0;
  // optimizer().hold_weights_for(use), and where the optimizer updates copies of the parameters
  // (zero1/2's pieces), the parameters brought up to date (collective there: every rank calls it).
  virtual void hold_weights_for(optim::Optimizer::Use use) { optimizer().hold_weights_for(use); }
  // This rank's optimizer state as pieces of the whole tensors, and which shard file it goes to
  // (parallel/data_parallel/optimizer_pieces.h): what each rank saves in a checkpoint, so that it resumes under any
  // strategy and world size. Not collective; the pieces alias the live state.
  virtual LocalOptimizerState local_optimizer_state() = 0;
  // Loads a saved state (written under any strategy and world size), each rank reading only the
  // elements of its own pieces. Throws CheckpointError for one that does not fit.
  virtual void load_optimizer_state(const SavedOptimizerState& saved) = 0;
  // Present bytes; optimizer state counts what exists now (nothing before the first step).
  virtual MemoryReport memory() const = 0;
  // The options the strategy was created with.
  const StrategyOptions& options() const { return options_; }

  // What the model calls around each unit (zero3, hybrid); null when its parameters stay whole.
  virtual model::UnitHooks* unit_hooks() { return nullptr; }
  // How a scope outside a forward uses the whole parameters.
  enum class WholeAccess {
    // The main rank reads them to save (checkpoints, the final model). zero3 gathers them unit
    // by unit and hands the main rank host copies: no device ever holds more than two units
    // whole, and the other ranks' parameters stay freed (do not read them there).
    kSave,
    // Every rank writes them (weights loaded on resume); each then keeps its chunk of them.
    kLoad,
  };
  // trainer.param_dtype=bf16: whether the strategy keeps the fp32 masters of the parameters it
  // steps (zero1/2: its pieces) and holds the parameters in bf16 itself; otherwise the trainer's
  // MasterWeights does (train/step/master_weights.h).
  virtual bool keeps_fp32_masters() const { return false; }
  // Makes every parameter whole for `access` (collective under zero3); `main`: this rank saves.
  virtual void gather_parameters(WholeAccess /*access*/, bool /*main*/) {}
  // Ends the scope: keeps what kLoad wrote (each rank copies its chunk back into its shard, or
  // its offloaded masters) and frees the parameters again.
  virtual void release_parameters(WholeAccess /*access*/) {}

 private:
  StrategyOptions options_;
};

// gather_parameters() for a scope.
class WholeParameters {
 public:
  using Access = ShardingStrategy::WholeAccess;
  WholeParameters(ShardingStrategy& strategy, Access access, bool main) : strategy_(strategy), access_(access) {
    strategy_.gather_parameters(access, main);
  }
  ~WholeParameters() { strategy_.release_parameters(access_); }
  WholeParameters(const WholeParameters&) = delete;
  WholeParameters& operator=(const WholeParameters&) = delete;

 private:
  ShardingStrategy& strategy_;
  Access access_;
};

}  // namespace hftrain::parallel
