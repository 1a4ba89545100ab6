#include "model/encoder/modernbert.h"

#include <algorithm>
#include <cmath>

#include <torch/torch.h>

#include "model/encoder/bert.h"
#include "model/encoder/encoder_modules.h"
#include "model/rope.h"
#include "model/spec.h"

namespace hftrain::model {
using namespace encoder;  // level, dropped_out
namespace {

// torch.nn.init.trunc_normal_(t, 0, std, -cutoff * std, cutoff * std): uniform between the normal
// CDF's values at the bounds, mapped back through the inverse CDF.
void trunc_normal(torch::Tensor& t, double std, double cutoff) {
  const double upper = 0.5 * (1.0 + std::erf(cutoff / std::sqrt(2.0)));
  const double lower = 1.0 - upper;
  t.uniform_(2 * lower - 1, 2 * upper - 1).erfinv_().mul_(std * std::sqrt(2.0)).clamp_(-cutoff * std, cutoff * std);
}

}  // namespace

Norm modernbert_norm(const BertSpec& spec) {
  return Norm(spec.hidden_size, /*layer_norm=*/true, spec.layer_norm_eps, /*unit_offset=*/false, spec.norm_bias);
}

ModernBertLayerImpl::ModernBertLayerImpl(const BertSpec& s, int64_t index) : spec_(s) {
  const int64_t c = s.hidden_size, f = s.intermediate_size;
  if (index > 0) attn_norm_ = register_module("attn_norm", modernbert_norm(s));
  auto attn = level(*this, "attn");
  wqkv_ = attn->register_module("Wqkv", Dense(c, 3 * c, s.attention_bias));
  attn_wo_ = attn->register_module("Wo", Dense(c, c, s.attention_bias));
  mlp_norm_ = register_module("mlp_norm", modernbert_norm(s));
  auto mlp = level(*this, "mlp");
  wi_ = mlp->register_module("Wi", Dense(c, 2 * f, s.mlp_bias));
  mlp_wo_ = mlp->register_module("Wo", Dense(f, c, s.mlp_bias));
}

torch::Tensor ModernBertLayerImpl::forward(const torch::Tensor& x, const Tokens& tokens, const torch::Tensor& mask,
                                           const torch::Tensor& cos, const torch::Tensor& sin) {
  const int64_t B = tokens.batch, T = tokens.length, H = spec_.num_attention_heads, D = spec_.head_dim();
  const auto h = attn_norm_ ? attn_norm_(x) : x;
  // The projections on the tokens only; attention on the padded (B, T) layout: (B, T, 3, H, D) ->
  // three (B, H, T, D), RoPE in fp32 as apply_rotary_pos_emb, back to x's dtype.
  const auto qkv = tokens.padded(wqkv_(h)).view({B, T, 3, H, D}).unbind(2);
  auto rotate = [&](const torch::Tensor& t) {
    return apply_rope(t.transpose(1, 2).to(torch::kFloat32), cos, sin).to(x.scalar_type());
  };
  const double p = is_training() ? spec_.attention_probs_dropout_prob : 0.0;
  const auto attn_mask = mask.defined() ? std::optional<torch::Tensor>(mask) : std::nullopt;
  auto y = at::scaled_dot_product_attention(rotate(qkv[0]), rotate(qkv[1]), qkv[2].transpose(1, 2), attn_mask, p,
                                            /*is_causal=*/false);
  y = tokens.unpadded(y.transpose(1, 2).reshape({B, T, H * D}));
  auto out = x + dropped_out(attn_wo_(y), spec_.attention_probs_dropout_prob, is_training());
  const auto parts = wi_(mlp_norm_(out)).chunk(2, -1);  // input, gate
  const auto gated = bert_activation(parts[0], spec_.hidden_act) * parts[1];
  return out + mlp_wo_(dropped_out(gated, spec_.mlp_dropout, is_training()));
}

torch::Tensor ModernBertLayerImpl::Tokens::padded(const torch::Tensor& t) const {
  if (!index.defined()) return t.reshape({batch, length, t.size(-1)});
  return torch::zeros({batch * length, t.size(-1)}, t.options())
      .index_copy(0, index, t)
      .view({batch, length, t.size(-1)});
}

torch::Tensor ModernBertLayerImpl::Tokens::unpadded(const torch::Tensor& t) const {
  const auto flat = t.reshape({batch * length, t.size(-1)});
  return index.defined() ? flat.index_select(0, index) : flat;
}

std::pair<torch::Tensor, torch::Tensor> modernbert_rope(const BertSpec& spec, double theta) {
  ModelSpec rope;  // default RoPE over whole heads
  rope.arch = config::ModelArch::kLlama;
  rope.d_model = spec.hidden_size;
  rope.n_head = spec.num_attention_heads;
  rope.max_seq_len = spec.max_position_embeddings;
  rope.rope_theta = theta;
  const RopeTables tables = rope_tables(rope);
  return {tables.cos, tables.sin};
}

torch::Tensor modernbert_window(const BertSpec& spec, int64_t T, const torch::Device& device) {
  const auto pos = torch::arange(T, torch::TensorOptions().dtype(torch::kInt64).device(device));
  return (pos.unsqueeze(1) - pos.unsqueeze(0)).abs() <= spec.local_attention / 2;
}

void init_modernbert(const std::vector<std::pair<std::string, torch::Tensor>>& parameters, const BertSpec& spec) {
  torch::NoGradGuard no_grad;
  const double in = spec.initializer_range;
  const double out = in / std::sqrt(2.0 * static_cast<double>(spec.num_hidden_layers));
  const double final_out = 1.0 / std::sqrt(static_cast<double>(spec.hidden_size));
  for (auto [name, p] : parameters) {
    if (name.find("norm.") != std::string::npos) continue;  // ones and zeros as made
    if (name.ends_with(".bias")) {
      p.zero_();
    } else if (name.starts_with("classifier.")) {
      trunc_normal(p, final_out, spec.initializer_cutoff_factor);
    } else if (name.ends_with("Wo.weight") || name == "head.dense.weight") {
      trunc_normal(p, out, spec.initializer_cutoff_factor);
    } else {
      trunc_normal(p, in, spec.initializer_cutoff_factor);
    }
    if (name.ends_with("tok_embeddings.weight") && spec.pad_token_id) p[*spec.pad_token_id].zero_();
  }
}

// The encoder's ModernBERT path (BertEncoder with BertSpec::modernbert()): forward and head.
BertOutput BertEncoderImpl::encode_modernbert(const torch::Tensor& input_ids, const torch::Tensor& attention_mask) {
  if (hooks_) hooks_->before_forward(0);
  const int64_t B = input_ids.size(0), T = input_ids.size(1);
  check_length(T);
  // Unpadded: the tokens alone (N, C) through the layers; their states go back to (B, T, C) at the
  // end, zeros at the padding.
  ModernBertLayerImpl::Tokens tokens{B, T, {}};
  if (attention_mask.defined()) {
    const auto index = attention_mask.reshape({-1}).nonzero().reshape({-1});
    if (index.size(0) < B * T) tokens.index = index;
  }
  const auto ids = input_ids.reshape({-1});
  auto x = word_embeddings_(tokens.index.defined() ? ids.index_select(0, tokens.index) : ids);
  x = dropped_out(norm_(x), spec_.embedding_dropout, is_training());
  // Padded keys are never attended; a sliding layer's queries see keys within the window only.
  torch::Tensor mask, window;
  if (attention_mask.defined()) mask = attention_mask.ne(0).view({B, 1, 1, T});
  const bool any_sliding = std::find(spec_.sliding.begin(), spec_.sliding.end(), true) != spec_.sliding.end();
  if (any_sliding) {
    window = modernbert_window(spec_, T, input_ids.device());
    window = mask.defined() ? (mask & window) : window.view({1, 1, T, T});
  }
  const auto rows = [&](const torch::Tensor& table) { return table.narrow(0, 0, T).to(x.scalar_type()); };
  const torch::Tensor cos = rows(rope_cos_), sin = rows(rope_sin_);
  const torch::Tensor local_cos = rows(rope_local_cos_), local_sin = rows(rope_local_sin_);
  auto* layers = layers_.get();
  const std::vector<bool> sliding = spec_.sliding;
  x = run_layers(
      x, [layers, sliding, tokens, mask, window, cos, sin, local_cos, local_sin](size_t i, const torch::Tensor& h) {
        const bool local = sliding[i];
        return layers->ptr<ModernBertLayerImpl>(i)->forward(h, tokens, local ? window : mask, local ? local_cos : cos,
                                                            local ? local_sin : sin);
      });
  return {tokens.padded(final_norm_(x)), {}};
}

// ModernBERT's head: dense, activation and norm on the first token's state, the tokens' mean
// (classifier_pooling "mean", over the attention mask), or every token's (a token classifier).
torch::Tensor BertEncoderImpl::modernbert_features(const BertOutput& encoded, const torch::Tensor& attention_mask) {
  torch::Tensor x = encoded.last_hidden_state;
  if (!spec_.per_token) {
    if (!spec_.mean_pooling) {
      x = x.select(1, 0);
    } else {
      const auto m = attention_mask.defined() ? attention_mask.to(x.scalar_type())
                                              : torch::ones({x.size(0), x.size(1)}, x.options());
      x = (x * m.unsqueeze(-1)).sum(1) / m.sum(1, /*keepdim=*/true);
    }
  }
  return head_norm_(bert_activation(head_dense_(x), spec_.classifier_activation));
}

}  // namespace hftrain::model
