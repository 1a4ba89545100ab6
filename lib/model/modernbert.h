// ModernBERT's pieces for the encoder in bert.h (BertSpec::modernbert()), computed as transformers'
// ModernBertModel does with its SDPA attention on padded batches: the LayerNorm without a bias, one
// pre-norm layer (fused Wqkv attention with RoPE over a padding mask, and for a sliding layer a
// window of local_attention / 2 positions either side; the GeGLU MLP), the RoPE tables, and
// ModernBertPreTrainedModel's truncated-normal initialisation. Parameter names are transformers':
// norm.{weight,bias}; attn_norm, attn.Wqkv, attn.Wo, mlp_norm, mlp.Wi, mlp.Wo.
#pragma once

#include <cstdint>
#include <utility>

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include "model/bert_spec.h"
#include "model/dense.h"

namespace hftrain::model {

// BERT's activations (hidden_act, ModernBERT's hidden_activation and classifier_activation).
torch::Tensor bert_activation(const torch::Tensor& x, BertActivation act);

// torch.nn.LayerNorm(C, eps, bias=with_bias): "weight" (ones) and, with a bias, "bias" (zeros).
class EncoderNormImpl : public torch::nn::Module {
 public:
  EncoderNormImpl(int64_t size, double eps, bool with_bias);
  torch::Tensor forward(const torch::Tensor& x);

 private:
  torch::Tensor weight_, bias_;
  double eps_;
};
TORCH_MODULE(EncoderNorm);

class ModernBertLayerImpl : public torch::nn::Module {
 public:
  ModernBertLayerImpl(const BertSpec& spec, int64_t index);
  // x (B, T, C); mask (B, 1, 1, T) or (B, 1, T, T) bool, true where a query may attend a key, or
  // undefined; cos, sin (T, head_dim) in x's dtype.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask, const torch::Tensor& cos,
                        const torch::Tensor& sin);

 private:
  BertSpec spec_;
  EncoderNorm attn_norm_{nullptr};  // none in the first layer (transformers' nn.Identity)
  EncoderNorm mlp_norm_{nullptr};
  Dense wqkv_{nullptr}, attn_wo_{nullptr}, wi_{nullptr}, mlp_wo_{nullptr};
};
TORCH_MODULE(ModernBertLayer);

// cos and sin (max_position_embeddings, head_dim) float32 for RoPE base `theta`, as
// ModernBertRotaryEmbedding computes them.
std::pair<torch::Tensor, torch::Tensor> modernbert_rope(const BertSpec& spec, double theta);

// The sliding layers' mask: (T, T) bool, true where |query - key| <= local_attention / 2.
torch::Tensor modernbert_window(const BertSpec& spec, int64_t T, const torch::Device& device);

// ModernBertPreTrainedModel._init_weights over `parameters` (our names, which are transformers'):
// truncated normals at +- initializer_cutoff_factor standard deviations, initializer_range for
// the embeddings, Wqkv and Wi, initializer_range / sqrt(2 x layers) for the output projections and
// head.dense, hidden_size^-1/2 for the classifier; biases zero, norms one; the padding row zero.
void init_modernbert(const std::vector<std::pair<std::string, torch::Tensor>>& parameters, const BertSpec& spec);

}  // namespace hftrain::model
