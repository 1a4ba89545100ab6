#include "model/decoder/blocks.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <torch/torch.h>

#include "model/numeric_trace.h"

namespace hftrain::model {
namespace F = torch::nn::functional;

NormImpl::NormImpl(int64_t dim, bool layer_norm, double eps, bool unit_offset, bool bias)
    : layer_norm_(layer_norm), eps_(eps), unit_offset_(unit_offset) {
  weight_ = register_parameter("weight", unit_offset ? torch::zeros({dim}) : torch::ones({dim}));
  if (layer_norm_ && bias) bias_ = register_parameter("bias", torch::zeros({dim}));
}

torch::Tensor NormImpl::forward(const torch::Tensor& x) {
  const std::vector<int64_t> shape{x.size(-1)};
  const auto summed = [this](const torch::Tensor& p) {
    return sum_grad_over_ && p.defined() ? tp_sum_grad(p, *sum_grad_over_) : p;
  };
  const torch::Tensor weight = summed(weight_);
  if (split_over_) {  // RMSNorm over every rank's features: the mean square summed over the group
    const torch::Tensor xf = x.to(torch::kFloat32);
    const torch::Tensor mean_square = tp_sum(xf.pow(2).sum(-1, true), *split_over_) / static_cast<double>(whole_dim_);
    const torch::Tensor normed = (xf * torch::rsqrt(mean_square + eps_)).to(x.scalar_type());
    return normed * (unit_offset_ ? weight + 1 : weight);
  }
  if (layer_norm_) return at::layer_norm(x, shape, weight, summed(bias_), eps_);
  if (unit_offset_) {  // Gemma: in fp32 whatever the dtypes, x * rsqrt(mean(x^2) + eps) * (1 + w)
    return at::rms_norm(x.to(torch::kFloat32), shape, weight.to(torch::kFloat32) + 1, eps_).to(x.scalar_type());
  }
  return at::rms_norm(x, shape, weight, eps_);
}

// Llama's rotary embedding in the Hugging Face layout: the head's two halves are rotated as pairs.
static torch::Tensor rotate_half(const torch::Tensor& x) {
  // chunk, not two narrows: its backward is one cat, not a zero-filled full tensor per half.
  const auto halves = x.chunk(2, -1);
  return torch::cat({-halves[1], halves[0]}, -1);
}

torch::Tensor apply_rope(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
  // x (B, H, T, D); cos/sin (T, R) or (B, 1, T, R) broadcast, R <= D: partial rotary factors rotate
  // the first R dimensions of each head and pass the rest through.
  const int64_t rotated = cos.size(-1);
  if (rotated == x.size(-1)) return x * cos + rotate_half(x) * sin;
  const auto parts = x.split_with_sizes({rotated, x.size(-1) - rotated}, -1);
  return torch::cat({parts[0] * cos + rotate_half(parts[0]) * sin, parts[1]}, -1);
}

namespace {

// Attention written out, for what SDPA cannot do (tanh soft-capping of the scores): softmax(cap *
// tanh(q k^T scale / cap) masked) v with the softmax in fp32, as transformers' eager attention.
// q (B, H, Tq, D); k, v (B, KVH, Tk, D); mask broadcast to (B, H, Tq, Tk), or undefined with
// `causal`: query i sees keys up to i + Tk - Tq.
torch::Tensor eager_attention(const torch::Tensor& q, torch::Tensor k, torch::Tensor v, const torch::Tensor& mask,
                              bool causal, double scale, double softcap, double dropout, bool training) {
  const int64_t groups = q.size(1) / k.size(1);
  if (groups > 1) {  // each key/value head serves `groups` consecutive query heads
    const auto repeat = [&](const torch::Tensor& t) {
      return t.unsqueeze(2).expand({t.size(0), t.size(1), groups, t.size(2), t.size(3)}).reshape(
          {t.size(0), t.size(1) * groups, t.size(2), t.size(3)});
    };
    k = repeat(k);
    v = repeat(v);
  }
  auto scores = torch::matmul(q, k.transpose(2, 3)) * scale;
  if (softcap > 0) scores = torch::tanh(scores / softcap) * softcap;
  torch::Tensor allowed = mask;
  const int64_t tq = q.size(2), tk = k.size(2);
  if (!allowed.defined() && causal && tq > 1) {
    allowed = torch::ones({tq, tk}, q.options().dtype(torch::kBool)).tril(tk - tq);
  }
  if (allowed.defined()) {
    // -inf in any dtype (every row keeps its own position, so none is wholly masked).
    scores = scores.masked_fill(allowed.logical_not(), -std::numeric_limits<double>::infinity());
  }
  auto weights = torch::softmax(scores, -1, torch::kFloat32).to(q.scalar_type());
  weights = F::dropout(weights, F::DropoutFuncOptions().p(dropout).training(training));
  return torch::matmul(weights, v);
}

}  // namespace

AttentionImpl::AttentionImpl(const ModelSpec& spec)
    : n_head_(spec.n_head),
      n_kv_head_(spec.n_kv_head),
      head_dim_(spec.head_dim()),
      dropout_(spec.dropout),
      softcap_(spec.attn_logit_softcapping) {
  if (spec.query_pre_attn_scalar > 0) scale_ = spec.attention_scale();
  const int64_t qkv_out = (n_head_ + 2 * n_kv_head_) * head_dim_;
  qkv_proj = register_module("qkv_proj",
                             Dense(spec.d_model, qkv_out, spec.qkv_bias()));
  o_proj = register_module(
      "o_proj", Dense(n_head_ * head_dim_, spec.d_model, spec.o_bias()));
  if (spec.qk_norm != config::QkNorm::kNone) {
    const bool per_head = spec.qk_norm == config::QkNorm::kHead;
    const auto rms = [&](int64_t dim) { return Norm(dim, /*layer_norm=*/false, spec.norm_eps, spec.norm_unit_offset); };
    q_norm = register_module("q_norm", rms(per_head ? head_dim_ : n_head_ * head_dim_));
    k_norm = register_module("k_norm", rms(per_head ? head_dim_ : n_kv_head_ * head_dim_));
    per_head_qk_norm_ = per_head;
  }
}

void AttentionImpl::set_tensor_parallel(TpGroup* group) {
  tp_ = group;
  n_head_ /= group->size();
  n_kv_head_ /= group->size();
  if (q_norm && per_head_qk_norm_) {
    // Per-head norms: one weight for every head, each rank's gradient from its own heads.
    q_norm->sum_grad_over(group);
    k_norm->sum_grad_over(group);
  } else if (q_norm) {  // OLMo 2's norms over all heads: each rank its heads' features and weights
    q_norm->split_over(group, n_head_ * head_dim_ * group->size());
    k_norm->split_over(group, n_kv_head_ * head_dim_ * group->size());
  }
}

torch::Tensor AttentionImpl::project_out(const torch::Tensor& y) {
  return tp_ ? row_parallel_linear(y, o_proj->weight, o_proj->bias, *tp_) : o_proj(y);
}

torch::Tensor AttentionImpl::forward(const torch::Tensor& input, const AttentionInputs& in, LayerCache* cache) {
  const torch::Tensor x = tp_ ? tp_enter(input, *tp_) : input;
  const int64_t B = x.size(0);
  const int64_t T = x.size(1);
  auto qkv = qkv_proj(x);  // (B, T, (H + 2 KVH) D)
  // One split rather than three narrows: the backward of a split writes the three gradients into
  // one tensor (a cat), where each narrow's backward fills a zero tensor of qkv's whole size and
  // autograd adds the three (a non-vectorised fp32 add and copies that led a GPU step's kernels).
  const auto parts = qkv.split_with_sizes({n_head_ * head_dim_, n_kv_head_ * head_dim_, n_kv_head_ * head_dim_}, -1);
  torch::Tensor q, k;
  if (q_norm && !per_head_qk_norm_) {  // OLMo 2: all of q, all of k, before the heads are split
    q = q_norm(parts[0]).view({B, T, n_head_, head_dim_});
    k = k_norm(parts[1]).view({B, T, n_kv_head_, head_dim_});
  } else {
    q = parts[0].view({B, T, n_head_, head_dim_});
    k = parts[1].view({B, T, n_kv_head_, head_dim_});
    if (q_norm) {  // Qwen3: each head normalised over its head_dim values, before RoPE
      q = q_norm(q);
      k = k_norm(k);
    }
  }
  q = q.transpose(1, 2);
  k = k.transpose(1, 2);
  auto v = parts[2].view({B, T, n_kv_head_, head_dim_}).transpose(1, 2);  // q (B, H, T, D); k, v (B, KVH, T, D)
  if (in.cos.defined()) {
    q = apply_rope(q, in.cos, in.sin);
    k = apply_rope(k, in.cos, in.sin);
  }
  bool causal = true;
  if (cache) {
    cache->keys->narrow(2, cache->offset, T).copy_(k);
    cache->values->narrow(2, cache->offset, T).copy_(v);
    // A sliding layer's new position sees only the window's last keys.
    const int64_t end = cache->offset + T;
    const int64_t start = in.window > 0 && T == 1 ? std::max<int64_t>(0, end - in.window) : 0;
    k = cache->keys->narrow(2, start, end - start);
    v = cache->values->narrow(2, start, end - start);
    // Generation prefills from an empty cache (causal) and then adds one position at a time,
    // which may attend to everything before it.
    TORCH_CHECK(cache->offset == 0 || T == 1, "KV cache: extend by one position at a time");
    causal = cache->offset == 0;
  }
  if (in.cu_seqlens.defined()) {
    // Packed documents as one sequence of B x T tokens cut at cu_seqlens: flash attention's
    // variable-length kernel, causal within each document (document_mask.h).
    TORCH_CHECK(!cache, "packed documents are for training rows, not a KV cache");
    const auto flat = [&](const torch::Tensor& t, int64_t heads) {
      return t.transpose(1, 2).reshape({B * T, heads, head_dim_}).to(in.varlen_dtype);
    };
    TORCH_CHECK(softcap_ == 0, "soft-capped attention has no variable-length kernel");
    const TpRngFork own_numbers(q.device(), tp_ && is_training() && dropout_ > 0);
    const std::optional<int64_t> left = in.window > 0 ? std::optional<int64_t>(in.window - 1) : std::nullopt;
    const std::optional<int64_t> right = in.window > 0 ? std::optional<int64_t>(0) : std::nullopt;
    auto out = std::get<0>(at::_flash_attention_forward(
        flat(q, n_head_), flat(k, n_kv_head_), flat(v, n_kv_head_), in.cu_seqlens, in.cu_seqlens, in.max_seqlen,
        in.max_seqlen, is_training() ? dropout_ : 0.0, /*is_causal=*/true, /*return_debug_mask=*/false, scale_, left,
        right));
    return project_out(out.view({B, T, n_head_ * head_dim_}));
  }
  // A document mask holds the causal rule itself (document_mask.h).
  if (in.mask.defined()) causal = false;
  const std::optional<torch::Tensor> mask = in.mask.defined() ? std::optional<torch::Tensor>(in.mask) : std::nullopt;
  const double dropout = is_training() ? dropout_ : 0.0;
  // A rank's heads drop their own numbers (tensor_parallel.h).
  const TpRngFork own_numbers(q.device(), tp_ && dropout > 0);
  auto y = softcap_ > 0 ? eager_attention(q, k, v, in.mask, causal,
                                          scale_.value_or(1.0 / std::sqrt(static_cast<double>(head_dim_))), softcap_,
                                          dropout, is_training())
                        : at::scaled_dot_product_attention(q, k, v, mask, dropout, causal, scale_,
                                                           /*enable_gqa=*/n_kv_head_ != n_head_);
  y = y.transpose(1, 2).reshape({B, T, n_head_ * head_dim_});  // (B, T, H D)
  return project_out(y);
}

BlockImpl::BlockImpl(const ModelSpec& spec, int64_t layer)
    : dropout_(spec.dropout), name_("layers." + std::to_string(layer)) {
  const auto norm = [&] { return Norm(spec.d_model, spec.layer_norm(), spec.norm_eps, spec.norm_unit_offset); };
  if (spec.pre_norms()) attn_norm = register_module("attn_norm", norm());
  attn = register_module("attn", Attention(spec));
  if (spec.post_norms()) attn_post_norm = register_module("attn_post_norm", norm());
  if (spec.pre_norms()) mlp_norm = register_module("mlp_norm", norm());
  if (spec.layer_is_moe(layer)) {
    moe = register_module("moe", Moe(spec));
  } else {
    mlp = register_module("mlp", Mlp(spec));
  }
  if (spec.post_norms()) mlp_post_norm = register_module("mlp_post_norm", norm());
}

void BlockImpl::set_tensor_parallel(TpGroup* group) {
  attn->set_tensor_parallel(group);
  if (mlp) {
    mlp->set_tensor_parallel(group);
  } else {
    moe->set_tensor_parallel(group);
  }
  if (!group->sequence_parallel()) return;
  own_dropout_ = true;
  for (Norm* norm : {&attn_norm, &attn_post_norm, &mlp_norm, &mlp_post_norm}) {
    if (*norm) (*norm)->sum_grad_over(group);
  }
}

torch::Tensor BlockImpl::forward(const torch::Tensor& x, const AttentionInputs& in, LayerCache* cache) {
  // Under sequence parallelism each rank holds its own slice of the sequence: its own numbers.
  const auto dropped = [&](const torch::Tensor& t) {
    const TpRngFork own_numbers(t.device(), own_dropout_ && is_training() && dropout_ > 0);
    return F::dropout(t, F::DropoutFuncOptions().p(dropout_).training(is_training()));
  };
  // Each part recorded under debug.underflow_overflow (numeric_trace.h; nothing without it).
  NumericTrace* const trace = numeric_trace();
  const auto recorded = [&](const char* part, const torch::nn::Module* m, const torch::Tensor& input,
                          const torch::Tensor& output) -> const torch::Tensor& {
    if (trace) trace->record(*part ? name_ + "." + part : name_, m, input, output);
    return output;
  };
  const auto attn_in = attn_norm ? recorded("attn_norm", attn_norm.get(), x, attn_norm(x)) : x;
  auto a = recorded("attn", attn.get(), attn_in, attn(attn_in, in, cache));
  if (attn_post_norm) a = recorded("attn_post_norm", attn_post_norm.get(), a, attn_post_norm(a));
  const auto h = x + dropped(a);
  const auto mlp_in = mlp_norm ? recorded("mlp_norm", mlp_norm.get(), h, mlp_norm(h)) : h;
  auto m = mlp ? recorded("mlp", mlp.get(), mlp_in, mlp(mlp_in)) : recorded("moe", moe.get(), mlp_in, moe(mlp_in));
  if (mlp_post_norm) m = recorded("mlp_post_norm", mlp_post_norm.get(), m, mlp_post_norm(m));
  return recorded("", nullptr, x, h + dropped(m));
}

}  // namespace hftrain::model
