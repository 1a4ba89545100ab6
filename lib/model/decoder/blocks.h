// The pieces of a transformer block: normalisation, attention, MLP, and the block itself.
#pragma once

#include <cstdint>
#include <optional>

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include "model/dense.h"
#include "model/decoder/mlp.h"
#include "model/decoder/moe.h"
#include "model/spec.h"
#include "model/decoder/tensor_parallel.h"

namespace hftrain::model {

// LayerNorm (weight and bias) or RMSNorm (weight only), as the spec says. With a unit offset
// (Gemma) RMSNorm scales by 1 + weight, computed in fp32, and the weight starts at 0.
class NormImpl : public torch::nn::Module {
 public:
  // layer_norm: LayerNorm (with a bias unless `bias` is false, as ModernBERT's), else RMSNorm
  // ((1 + w) with unit_offset, Gemma's).
  NormImpl(int64_t dim, bool layer_norm, double eps, bool unit_offset = false, bool bias = true);
  torch::Tensor forward(const torch::Tensor& x);
  // Tensor parallelism: each rank sees part of the weight's gradient (the norm runs on a slice of
  // the sequence, or of the heads); the parts are summed over `group` in the backward.
  void sum_grad_over(TpGroup* group) { sum_grad_over_ = group; }
  // Tensor parallelism, an RMSNorm over features split across `group` (OLMo 2's q and k norms over
  // all heads, each rank holding its heads' features and weights): the mean square is summed over
  // the group, `whole_dim` features in all.
  void split_over(TpGroup* group, int64_t whole_dim) {
    split_over_ = group;
    whole_dim_ = whole_dim;
  }

 private:
  TpGroup* sum_grad_over_ = nullptr;
  TpGroup* split_over_ = nullptr;
  int64_t whole_dim_ = 0;
  bool layer_norm_;
  double eps_;
  bool unit_offset_;
  torch::Tensor weight_;
  torch::Tensor bias_;
};
TORCH_MODULE(Norm);

// Rotary position embedding in the Hugging Face layout (the head's two halves rotated as pairs):
// x (B, H, T, D) * cos + rotate_half(x) * sin; cos/sin (T, R) or (B, 1, T, R), R <= D (partial
// rotary factors rotate the first R dimensions and pass the rest through).
torch::Tensor apply_rope(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);

// What every attention layer of a forward shares, made once per batch by the transformer.
struct AttentionInputs {
  torch::Tensor cos, sin;  // RoPE tables for the positions: (T, head_dim), or (B, 1, T, head_dim)
                           // with per-row position ids; undefined for GPT-2
  torch::Tensor mask;      // (B, 1, T, T) or (T, T) bool, true = may attend (document masking, a
                           // sliding window), or undefined: plain causal attention
  int64_t window = 0;      // sliding layers: keys lie at most window - 1 positions back (0: any)
  // Document masking as variable-length flash attention on CUDA (document_mask.h): the int32
  // document offsets in the flattened batch, or undefined. q, k and v are cast to varlen_dtype.
  torch::Tensor cu_seqlens;
  int64_t max_seqlen = 0;
  torch::ScalarType varlen_dtype = torch::kBFloat16;
};

// Per-layer slice of a KV cache, plus where the new positions start.
struct LayerCache {
  torch::Tensor* keys = nullptr;    // (B, n_kv_head, capacity, head_dim)
  torch::Tensor* values = nullptr;
  int64_t offset = 0;
};

class AttentionImpl : public torch::nn::Module {
 public:
  explicit AttentionImpl(const ModelSpec& spec);
  // x (B, T, C).
  torch::Tensor forward(const torch::Tensor& x, const AttentionInputs& in, LayerCache* cache);
  // Tensor parallelism (tensor_parallel.h): this rank computes its share of the heads with its
  // pieces of qkv_proj and o_proj (tp_plan.h), which the caller has put in place.
  void set_tensor_parallel(TpGroup* group);

  Dense qkv_proj{nullptr};
  Dense o_proj{nullptr};
  Norm q_norm{nullptr};  // qk_norm head: RMSNorm over each head's head_dim values; projection: over
  Norm k_norm{nullptr};  // all of q (n_head x head_dim), of k (n_kv_head x head_dim); else unset

 private:
  // o_proj (row-parallel under tensor parallelism: over this rank's heads, summed over the group).
  torch::Tensor project_out(const torch::Tensor& y);

  TpGroup* tp_ = nullptr;
  int64_t n_head_, n_kv_head_, head_dim_;
  double dropout_;
  bool per_head_qk_norm_ = false;
  std::optional<double> scale_;  // unset: SDPA's own 1 / sqrt(head_dim)
  double softcap_ = 0;
};
TORCH_MODULE(Attention);

// Residual block: x + attn(norm(x)), then x + mlp(norm(x)) with pre-norms (GPT-2, Llama);
// x + norm(attn(x)) with post-norms (OLMo 2); x + norm(attn(norm(x))) with both (Gemma 2).
class BlockImpl : public torch::nn::Module {
 public:
  // `layer` (from 0) decides whether the block's MLP is a mixture of experts (spec.layer_is_moe).
  BlockImpl(const ModelSpec& spec, int64_t layer);
  torch::Tensor forward(const torch::Tensor& x, const AttentionInputs& in, LayerCache* cache);
  // Tensor parallelism for the attention and the MLP; with sequence parallelism the norms too.
  void set_tensor_parallel(TpGroup* group);

  Norm attn_norm{nullptr};       // pre-norms (unset with post-norms alone)
  Attention attn{nullptr};
  Norm attn_post_norm{nullptr};  // post-norms (unset with pre-norms alone)
  Norm mlp_norm{nullptr};
  Mlp mlp{nullptr};              // or, in a mixture-of-experts layer:
  Moe moe{nullptr};
  Norm mlp_post_norm{nullptr};

 private:
  double dropout_;
  bool own_dropout_ = false;  // sequence parallelism: the residual dropout from this rank's stream
  std::string name_;          // "layers.<layer>", as its parameters are named (numeric_trace.h)
};
TORCH_MODULE(Block);

}  // namespace hftrain::model
