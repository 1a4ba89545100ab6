// The optimizer interface the training loop uses: AdamW and SGD run ATen's fused kernels
// (fused_adamw.h, fused_sgd.h); Adafactor and Lion, which ATen lacks, are ours (adafactor.h,
// lion.h), and so are Adagrad and RMSprop over ATen's multi-tensor kernels (adagrad.h, rmsprop.h).
// Groups come from param_groups.h; the schedule sets each group's lr as base lr x factor.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <torch/types.h>
#include <nlohmann/json.hpp>

#include "config/config.h"

namespace hftrain::optim {

using NamedParams = std::vector<std::pair<std::string, torch::Tensor>>;

// How a parameter is made of the reference model's weight matrices (the optimizers that treat each
// matrix as one, muon.h, read it): hftrain fuses some of Hugging Face's linear layers by rows
// (q/k/v into qkv_proj, gate/up into gate_up_proj) and stores GPT-2's Conv1D weights transposed.
struct MatrixParts {
  std::vector<int64_t> row_parts;  // rows of each stacked matrix, in order; empty: one matrix
  bool transposed = false;         // the reference model stores it transposed (cols x rows)
};
// Parameter name -> its matrices: the weights of the model's hidden linear layers.
using ModelMatrices = std::map<std::string, MatrixParts>;

struct ParamGroup {
  std::vector<std::string> names;
  std::vector<torch::Tensor> params;
  double base_lr = 0;
  double lr = 0;  // current: base_lr x the schedule's factor
  double weight_decay = 0;
  // Where params[i] is a piece of a larger parameter (the ZeRO strategies hand the optimizer
  // their flat piece of each): that parameter's element count, for the optimizers whose state
  // depends on it (adamw_8bit keeps a small parameter's moments in fp32). Empty: all are whole.
  std::vector<int64_t> whole_numels;
};

// Everything an optimizer needs to continue exactly where it was, for checkpoints.
//   tensors  "<param name>/<state key>" -> tensor, e.g. "layers.0.attn.qkv_proj.weight/exp_avg",
//            on the parameters' devices, in group order, then parameter order, then state-key
//            order. A parameter with no state yet (never stepped, or never had a gradient) has no
//            entries. State keys: adamw exp_avg, exp_avg_sq (+ max_exp_avg_sq with amsgrad); sgd
//            momentum_buffer (none without momentum); adafactor exp_avg (with beta1), then
//            exp_avg_sq_row + exp_avg_sq_col (2-d and up) or exp_avg_sq; lion exp_avg; adagrad
//            sum; rmsprop square_avg (+ momentum_buffer with momentum, grad_avg when centered).
//   meta     JSON: {"optimizer": "adamw", "format": 1, "groups": [{"params": [names], "base_lr",
//            "lr", "weight_decay"}], "steps": {name: n} (optimizers that count steps per parameter:
//            adamw, adafactor), "hyperparameters": {...}}. Hyperparameters and group lrs are
//            recorded for information only; on resume they come from the config.
// The tensors that state() returns are the optimizer's LIVE tensors, not copies: the next step()
// changes them in place. Write or copy them before stepping again. (Copies would double the
// optimizer's memory at every save; the checkpoint writer reads them straight away.)
struct OptimizerState {
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  nlohmann::json meta;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;

  // One update of every parameter with a gradient, at each group's current lr.
  virtual void step() = 0;
  void zero_grad();
  // Sets every group's lr to its base lr times `factor` (the schedule's multiplier).
  virtual void set_lr_factor(double factor);

  const std::vector<ParamGroup>& groups() const { return groups_; }

  // The optimizer's state, to save (see OptimizerState: the tensors alias the live state).
  virtual OptimizerState state() const = 0;
  // Replaces the state with `state`, whose tensors are copied (never aliased) onto the parameters'
  // devices, in the dtypes this optimizer keeps them in. Parameters without entries become
  // stateless, as if never stepped. Throws util::CheckpointError naming what does not match:
  // another optimizer, a parameter missing or unexpected, a state tensor missing, unexpected or of
  // the wrong shape, a malformed meta field. The optimizer is unchanged when it throws.
  virtual void load_state(const OptimizerState& state) = 0;

  // What the parameters are about to be used for. Optimizers that keep more than one set of
  // weights put the right one in the parameters here: schedule_free_adamw holds y to train and its
  // average x otherwise; EMA weights (ema.h) hold the training weights to train and to checkpoint
  // (the average goes into the optimizer state) and the average to evaluate or export when asked.
  enum class Use { kTrain, kCheckpoint, kEvaluate, kExport };
  // Call before step() (kTrain) and before evaluating, checkpointing or exporting. Returns true
  // when it changed parameter values (callers that keep copies of the parameters refresh them).
  // The optimizers that hold one set: a no-op that returns false.
  virtual bool hold_weights_for(Use /*use*/) { return false; }
  // Whether hold_weights_for can change anything (strategies and the trainer skip the switch, and
  // its collectives, for the optimizers that hold one set).
  virtual bool keeps_two_points() const { return false; }

  // Skipping an update on the device, with no host read (trainer.on_nonfinite=skip): the
  // optimizers whose kernels take a found-inf flag (ATen's fused AdamW) leave parameters, state and
  // step counts untouched in the next step() when `flag` (() float32 on the parameters' device)
  // holds 1, and update as usual when it holds 0. An undefined flag clears it. The others return
  // false from skips_on_device(), and the trainer reads its verdict on the host before stepping.
  virtual bool skips_on_device() const { return false; }
  virtual void skip_next_if(torch::Tensor flag) { skip_flag_ = std::move(flag); }

 protected:
  explicit Optimizer(std::vector<ParamGroup> groups) : groups_(std::move(groups)) {}
  // Pushes groups_[i].lr into the implementation before a step.
  virtual void apply_lrs() {}

  std::vector<ParamGroup> groups_;
  torch::Tensor skip_flag_;  // skip_next_if's flag, or undefined
};

// Builds the optimizer named by the config over `params` (names as in the model). `whole_numels`,
// parallel to `params` when given: the element count of the parameter each tensor is a piece of
// (see ParamGroup::whole_numels). `matrices`: the model's hidden weight matrices (muon's default
// targets). Throws ConfigError for group globs that match nothing or overlap.
std::unique_ptr<Optimizer> make_optimizer(const config::OptimizerConfig& config, const NamedParams& params,
                                          const std::vector<int64_t>& whole_numels = {},
                                          const ModelMatrices& matrices = {});

// How an optimizer's state follows pieces of parameters (what the ZeRO strategies hand it).
// Element-wise state follows any cut. adamw_8bit keeps one scale per `block` elements: a piece
// must start at a multiple of `block` within its parameter, and the state tensors named in
// `block_keys` hold one element per block (the last one possibly partial).
struct StateBlocks {
  int64_t block = 1;
  std::vector<std::string> block_keys;
  bool is_block_key(const std::string& key) const;
};
StateBlocks state_blocks(const config::OptimizerConfig& config);

}  // namespace hftrain::optim
