// DeBERTa-v2/v3's layer for the encoder in bert.h (BertSpec::deberta()), computed as transformers'
// DebertaV2Layer: BERT's post-norm layer whose self-attention adds the disentangled terms. With q,
// k, v the projections of a layer's input and P the LayerNorm'd relative-position embeddings
// (2 x span rows), the scores of query i and key j are
//   (q_i . k_j + c2p: q_i . Pk[clamp(d(i,j) + span)] + p2c: k_j . Pq[clamp(-d(i,j) + span)]) / sqrt(D x s)
// where d(i,j) is i - j in log buckets, Pk / Pq are P through the layer's key / query projections
// (share_att_key) or its pos_key_proj / pos_query_proj, and s counts the terms (1 + c2p + p2c). Padded
// keys and padded queries are masked (a padded query's row is uniform, as transformers' masked_fill).
// Parameter names are transformers': attention.self.{query_proj,key_proj,value_proj,pos_key_proj,
// pos_query_proj}, attention.output.{dense,LayerNorm}, intermediate.dense, output.{dense,LayerNorm}.
#pragma once

#include <cstdint>

#include <torch/nn/module.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include "model/encoder/bert_spec.h"
#include "model/dense.h"

namespace hftrain::model {

class DebertaLayerImpl : public torch::nn::Module {
 public:
  explicit DebertaLayerImpl(const BertSpec& spec);
  // x (B, T, C); mask (B, 1, T, T) bool, true where both the query and the key are tokens;
  // relative (T, T) int64 bucketed distances; rel (2 x span, C): the LayerNorm'd relative
  // embeddings (undefined without relative attention).
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask, const torch::Tensor& relative,
                        const torch::Tensor& rel);

 private:
  torch::Tensor attention(const torch::Tensor& x, const torch::Tensor& mask, const torch::Tensor& relative,
                          const torch::Tensor& rel);

  BertSpec spec_;
  Dense query_{nullptr}, key_{nullptr}, value_{nullptr}, pos_key_{nullptr}, pos_query_{nullptr};
  Dense attention_dense_{nullptr}, intermediate_{nullptr}, output_dense_{nullptr};
  torch::nn::LayerNorm attention_norm_{nullptr}, output_norm_{nullptr};
};
TORCH_MODULE(DebertaLayer);

// The relative positions i - j of a sequence of T tokens, (T, T) int64, in DeBERTa's log buckets
// when spec.position_buckets > 0 (make_log_bucket_position: exact within half the buckets,
// logarithmic beyond, up to max_relative_positions).
torch::Tensor deberta_relative_positions(const BertSpec& spec, int64_t T, const torch::Device& device);

}  // namespace hftrain::model
