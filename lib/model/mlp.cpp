#include "model/mlp.h"

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

torch::Tensor MlpImpl::forward(const torch::Tensor& x) {
  if (gated_) {
    auto gu = gate_up_proj(x);  // (B, T, 2 d_ff)
    const auto gate_up = gu.chunk(2, -1);  // one cat in the backward (see the attention's split)
    const auto gate = gelu_gate_ ? F::gelu(gate_up[0], F::GELUFuncOptions().approximate("tanh")) : F::silu(gate_up[0]);
    return down_proj(gate * gate_up[1]);
  }
  // GPT-2's "gelu_new" is the tanh approximation (as Gemma's gelu_pytorch_tanh).
  return down_proj(F::gelu(up_proj(x), F::GELUFuncOptions().approximate("tanh")));
}

}  // namespace hftrain::model
