// ModernBERT's pieces for the encoder in bert.h (BertSpec::modernbert()), computed as transformers'
// ModernBertModel does (its SDPA attention over the padded layout, the rest on the unpadded tokens,
// as its flash-attention path computes everything): its LayerNorm (blocks.h's Norm, a bias only
// where norm_bias is on), one pre-norm layer (fused Wqkv attention with RoPE over a padding mask,
// and for a sliding layer a window of local_attention / 2 positions either side; the GeGLU MLP), the
// RoPE tables, and ModernBertPreTrainedModel's truncated-normal initialisation. Parameter names are
// transformers': norm.{weight,bias}; attn_norm, attn.Wqkv, attn.Wo, mlp_norm, mlp.Wi, mlp.Wo.
#pragma once

#include <cstdint>
#include <utility>

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include "model/encoder/bert_spec.h"
#include "model/decoder/blocks.h"
#include "model/dense.h"

namespace hftrain::model {

// ModernBERT's LayerNorm: weight, and a bias only where norm_bias is on.
Norm modernbert_norm(const BertSpec& spec);

class ModernBertLayerImpl : public torch::nn::Module {
 public:
  // Where a batch's tokens lie in its (B, T) layout: `index` (N) of the positions that are tokens
  // (unpadded batches, as ModernBERT computes them: the projections and the MLP on the N tokens
  // only), or undefined: all B x T.
  struct Tokens {
    int64_t batch = 0, length = 0;
    torch::Tensor index;
    torch::Tensor padded(const torch::Tensor& t) const;    // (N, F) -> (B, T, F), zeros between
    torch::Tensor unpadded(const torch::Tensor& t) const;  // (B, T, F) -> (N, F)
  };

  ModernBertLayerImpl(const BertSpec& spec, int64_t index);
  // x (N, C): the batch's tokens; mask (B, 1, 1, T) or (B, 1, T, T) bool, true where a query may
  // attend a key, or undefined; cos, sin (T, head_dim) in x's dtype. Returns (N, C).
  torch::Tensor forward(const torch::Tensor& x, const Tokens& tokens, const torch::Tensor& mask,
                        const torch::Tensor& cos, const torch::Tensor& sin);

 private:
  BertSpec spec_;
  Norm attn_norm_{nullptr};  // none in the first layer (transformers' nn.Identity)
  Norm mlp_norm_{nullptr};
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
