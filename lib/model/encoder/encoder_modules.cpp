#include "model/encoder/encoder_modules.h"

#include <torch/torch.h>

namespace hftrain::model {
namespace F = torch::nn::functional;

namespace encoder {

std::shared_ptr<torch::nn::Module> level(torch::nn::Module& parent, const std::string& name) {
  return parent.register_module(name, std::make_shared<torch::nn::Module>());
}

Dense dense(torch::nn::Module& parent, const std::string& name, int64_t in, int64_t out, bool bias) {
  return parent.register_module(name, Dense(in, out, bias));
}

torch::nn::LayerNorm layer_norm(torch::nn::Module& parent, const BertSpec& s) {
  return parent.register_module(
      "LayerNorm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({s.hidden_size}).eps(s.layer_norm_eps)));
}

torch::Tensor dropped_out(const torch::Tensor& x, double p, bool training) {
  return p > 0 && training ? F::dropout(x, F::DropoutFuncOptions().p(p).training(true)) : x;
}

}  // namespace encoder

torch::Tensor bert_activation(const torch::Tensor& x, BertActivation act) {
  switch (act) {
    case BertActivation::kGelu:
      return F::gelu(x);  // exact (erf), as transformers' "gelu"
    case BertActivation::kGeluTanh:
      return F::gelu(x, F::GELUFuncOptions().approximate("tanh"));
    case BertActivation::kRelu:
      return torch::relu(x);
  }
  return x;
}

}  // namespace hftrain::model
