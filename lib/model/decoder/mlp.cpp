#include "model/decoder/mlp.h"

#include <torch/torch.h>

namespace hftrain::model {
namespace F = torch::nn::functional;

MlpImpl::MlpImpl(const ModelSpec& spec, int64_t d_ff)
    : gated_(spec.gated_mlp()),
      gelu_gate_(spec.activation == config::Activation::kGeluTanh),
      d_ff_(d_ff > 0 ? d_ff : spec.d_ff) {
  if (gated_) {
    gate_up_proj = register_module(
        "gate_up_proj", Dense(spec.d_model, 2 * d_ff_, spec.mlp_biases()));
  } else {
    up_proj = register_module("up_proj",
                              Dense(spec.d_model, d_ff_, spec.mlp_biases()));
  }
  down_proj = register_module(
      "down_proj", Dense(d_ff_, spec.d_model, spec.mlp_biases()));
}

void MlpImpl::set_tensor_parallel(TpGroup* group) {
  tp_ = group;
  d_ff_ /= group->size();
}

torch::Tensor MlpImpl::forward(const torch::Tensor& input) {
  const torch::Tensor x = tp_ ? tp_enter(input, *tp_) : input;
  torch::Tensor hidden;
  if (gated_) {
    auto gu = gate_up_proj(x);  // (B, T, 2 d_ff)
    const auto gate_up = gu.chunk(2, -1);  // one cat in the backward (see the attention's split)
    const auto gate = gelu_gate_ ? F::gelu(gate_up[0], F::GELUFuncOptions().approximate("tanh")) : F::silu(gate_up[0]);
    hidden = gate * gate_up[1];
  } else {
    // GPT-2's "gelu_new" is the tanh approximation (as Gemma's gelu_pytorch_tanh).
    hidden = F::gelu(up_proj(x), F::GELUFuncOptions().approximate("tanh"));
  }
  return tp_ ? row_parallel_linear(hidden, down_proj->weight, down_proj->bias, *tp_) : down_proj(hidden);
}

}  // namespace hftrain::model
