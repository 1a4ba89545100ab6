// A transformer block's MLP: GPT-2's up, GELU, down; the llama family's gated one, SwiGLU or
// GeGLU (Gemma), with gate and up fused into one Dense layer. Also a mixture of experts' shared expert.
#pragma once

#include <cstdint>

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include "model/dense.h"
#include "model/spec.h"
#include "model/decoder/tensor_parallel.h"

namespace hftrain::model {

class MlpImpl : public torch::nn::Module {
 public:
  // d_ff: the hidden size, the spec's own when 0.
  explicit MlpImpl(const ModelSpec& spec, int64_t d_ff = 0);
  torch::Tensor forward(const torch::Tensor& x);
  // Tensor parallelism (tensor_parallel.h): this rank computes its d_ff / size hidden units with its
  // pieces of the layers (tp_plan.h), which the caller has put in place.
  void set_tensor_parallel(TpGroup* group);

  Dense up_proj{nullptr};       // gpt2: C -> d_ff
  Dense gate_up_proj{nullptr};  // llama: C -> 2 d_ff (gate, then up)
  Dense down_proj{nullptr};

 private:
  TpGroup* tp_ = nullptr;
  bool gated_;
  bool gelu_gate_;  // GeGLU (Gemma) rather than SwiGLU
  int64_t d_ff_;
};
TORCH_MODULE(Mlp);

}  // namespace hftrain::model
