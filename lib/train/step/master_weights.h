// trainer.param_dtype=bf16: the model trains with bf16 weights and gradients, its residual stream
// in bf16 with no autocast (the norms compute their statistics in fp32), and the optimizer steps
// fp32 master weights, as Megatron and llm.c do. The masters are the parameters' own tensors: each
// parameter holds its bf16 copy for forward and backward and its fp32 master for the optimizer
// (set_data swaps which storage it points at; no copy). So the optimizer, its checkpointed state
// and the strategies see the same parameters as in an fp32 run, and a save, a load or an export
// inside a Scope reads or writes the fp32 masters: a checkpoint is an fp32 run's, and resumes
// exactly under either setting.
//
// Per step: backward in bf16 (on one process, micro-batches before the last add their gradients
// into fp32 accumulators); to_masters() gives every parameter its master and an fp32 gradient
// (clipping and the update then run in fp32); to_bf16() rounds the updated masters into the bf16
// copies. Memory per trained parameter: 2 (bf16 weight) + 2 (bf16 gradient) + 4 (master) + the
// optimizer's state; the fp32 gradients exist between to_masters() and zero_grad(). Under zero1/2
// the strategy keeps the masters of what it steps instead (its pieces; ShardingStrategy::
// keeps_fp32_masters), and this class only stores the frozen parameters in bf16.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/types.h>

namespace hftrain::train {

class MasterWeights {
 public:
  // `params`: the trained parameters, fp32, holding the weights to start from; afterwards they
  // hold their bf16 copies. `frozen`: floating parameters that do not train, stored in bf16.
  // `fp32_accumulation`: after_backward() adds the micro-batches' gradients up in fp32.
  MasterWeights(std::vector<torch::Tensor> params, const std::vector<torch::Tensor>& frozen,
                bool fp32_accumulation = true);
  MasterWeights(const MasterWeights&) = delete;
  MasterWeights& operator=(const MasterWeights&) = delete;

  // One process, after a micro-batch's backward that is not the step's last: its bf16 gradients
  // added into the fp32 accumulators, and freed.
  void accumulate();
  // After each backward: accumulate() where the micro-batches add up in fp32 (one process; under
  // ddp the last backward reduces what autograd accumulated, so they add up in bf16 there).
  void after_backward(bool last) {
    if (fp32_accumulation_ && !last) accumulate();
  }
  // Before clipping and the update: each parameter holds its master, its gradient in fp32 (the
  // accumulators plus the last bf16 gradient).
  void to_masters();
  // After the update: the bf16 copies rounded from the masters (to nearest even), and held.
  void to_bf16();
  bool holds_masters() const { return holds_masters_; }
  int64_t numel() const;
  // The memory report's clause on the masters.
  std::string memory_clause() const;

  // The masters in the parameters for a save, a load or an export; on leaving, the bf16 copies
  // are rounded from them again (a load may have changed them). Nests.
  class Scope {
   public:
    explicit Scope(MasterWeights* masters);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    MasterWeights* masters_;
    bool switched_ = false;
  };

 private:
  std::vector<torch::Tensor> params_;   // the parameters themselves (their storage swaps)
  std::vector<torch::Tensor> masters_;  // fp32 data
  std::vector<torch::Tensor> copies_;   // bf16 data
  std::vector<torch::Tensor> sums_;     // fp32 gradient accumulators (undefined until needed)
  bool holds_masters_ = false;
  bool fp32_accumulation_ = true;
};

}  // namespace hftrain::train
