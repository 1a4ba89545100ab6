#include "model/encoder/deberta.h"

#include <cmath>
#include <limits>

#include <torch/torch.h>

#include "model/encoder/bert.h"
#include "model/encoder/encoder_modules.h"
#include "model/neftune.h"

namespace hftrain::model {
using namespace encoder;  // level, dense, layer_norm, dropped_out
namespace {

double lowest(torch::ScalarType dtype) {
  switch (dtype) {
    case torch::kBFloat16:
      return static_cast<double>(std::numeric_limits<c10::BFloat16>::lowest());
    case torch::kHalf:
      return static_cast<double>(std::numeric_limits<c10::Half>::lowest());
    case torch::kDouble:
      return std::numeric_limits<double>::lowest();
    default:
      return std::numeric_limits<float>::lowest();
  }
}

}  // namespace

DebertaLayerImpl::DebertaLayerImpl(const BertSpec& s) : spec_(s) {
  const int64_t c = s.hidden_size;
  auto attention = level(*this, "attention");
  auto self = level(*attention, "self");
  query_ = dense(*self, "query_proj", c, c);
  key_ = dense(*self, "key_proj", c, c);
  value_ = dense(*self, "value_proj", c, c);
  if (s.relative_attention && !s.share_att_key) {
    if (s.c2p) pos_key_ = dense(*self, "pos_key_proj", c, c);
    if (s.p2c) pos_query_ = dense(*self, "pos_query_proj", c, c);
  }
  auto out = level(*attention, "output");
  attention_dense_ = dense(*out, "dense", c, c);
  attention_norm_ = layer_norm(*out, s);
  intermediate_ = dense(*level(*this, "intermediate"), "dense", c, s.intermediate_size);
  auto output = level(*this, "output");
  output_dense_ = dense(*output, "dense", s.intermediate_size, c);
  output_norm_ = layer_norm(*output, s);
}

torch::Tensor DebertaLayerImpl::attention(const torch::Tensor& x, const torch::Tensor& mask,
                                          const torch::Tensor& relative, const torch::Tensor& rel) {
  const int64_t B = x.size(0), T = x.size(1), H = spec_.num_attention_heads, D = spec_.head_dim();
  const auto heads = [&](const torch::Tensor& t) { return t.view({t.size(0), t.size(1), H, D}).transpose(1, 2); };
  const auto q = heads(query_(x)), k = heads(key_(x)), v = heads(value_(x));  // (B, H, T, D)
  const int64_t terms = 1 + (spec_.c2p ? 1 : 0) + (spec_.p2c ? 1 : 0);
  // transformers divides by sqrt(D * terms), computed as a float32 tensor and cast to the query's
  // dtype (under bf16 autocast, the projections' bf16).
  const auto scale = torch::sqrt(torch::tensor(static_cast<float>(D)) * terms).to(q.scalar_type());
  auto scores = torch::matmul(q, k.transpose(-1, -2) / scale);  // (B, H, T, T)
  if (spec_.relative_attention && (spec_.c2p || spec_.p2c)) {
    const int64_t span = spec_.relative_span();
    const auto p = dropped_out(rel, spec_.hidden_dropout_prob, is_training()).narrow(0, 0, 2 * span).unsqueeze(0);
    const auto index = [&](const torch::Tensor& r) {
      return torch::clamp(r + span, 0, 2 * span - 1).expand({B, H, T, T});
    };
    if (spec_.c2p) {  // query i against the position embedding of d(i, j)
      const auto pos_key = heads(spec_.share_att_key ? key_(p) : pos_key_(p));  // (1, H, 2S, D)
      scores = scores + torch::gather(torch::matmul(q, pos_key.transpose(-1, -2)), -1, index(relative)) / scale;
    }
    if (spec_.p2c) {  // key j against the position embedding of d(j, i), read back at (i, j)
      const auto pos_query = heads(spec_.share_att_key ? query_(p) : pos_query_(p));
      const auto p2c = torch::gather(torch::matmul(k, pos_query.transpose(-1, -2)), -1, index(-relative));
      scores = scores + p2c.transpose(-1, -2) / scale;
    }
  }
  // torch.finfo(dtype).min, as transformers fills: finite, so a padded query's row stays a number.
  scores = scores.masked_fill(mask.logical_not(), lowest(scores.scalar_type()));
  auto probs = dropped_out(torch::softmax(scores, -1), spec_.attention_probs_dropout_prob, is_training());
  return torch::matmul(probs, v).transpose(1, 2).reshape({B, T, H * D});
}

torch::Tensor DebertaLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& mask,
                                        const torch::Tensor& relative, const torch::Tensor& rel) {
  const double p = spec_.hidden_dropout_prob;
  const auto h =
      attention_norm_(dropped_out(attention_dense_(attention(x, mask, relative, rel)), p, is_training()) + x);
  const auto f = bert_activation(intermediate_(h), spec_.hidden_act);
  return output_norm_(dropped_out(output_dense_(f), p, is_training()) + h);
}

torch::Tensor deberta_relative_positions(const BertSpec& spec, int64_t T, const torch::Device& device) {
  const auto ids = torch::arange(T, torch::TensorOptions().dtype(torch::kInt64).device(device));
  const auto relative = ids.unsqueeze(1) - ids.unsqueeze(0);
  const int64_t buckets = spec.position_buckets;
  const int64_t range = spec.relative_range();
  if (buckets <= 0 || range <= 0) return relative;
  // make_log_bucket_position, in its float32 operations.
  const int64_t mid = buckets / 2;
  const auto sign = torch::sign(relative);
  const auto abs_pos =
      torch::where((relative < mid) & (relative > -mid), torch::full_like(relative, mid - 1), relative.abs());
  const auto log_scale = torch::log(torch::tensor(static_cast<float>(static_cast<double>(range - 1) / mid)));
  const auto log_pos = torch::ceil(torch::log(abs_pos.to(torch::kFloat32) / mid) / log_scale * (mid - 1)) + mid;
  return torch::where(abs_pos <= mid, relative.to(torch::kFloat32), log_pos * sign).to(torch::kInt64);
}

// The encoder's DeBERTa path (BertEncoder with BertSpec::deberta()): its modules and forward.
void BertEncoderImpl::build_deberta() {
  const BertSpec& spec = spec_;
  const int64_t c = spec.hidden_size, e = spec.word_embedding_size();
  auto deberta = level(*this, "deberta");
  auto embeddings = level(*deberta, "embeddings");
  auto word = torch::nn::EmbeddingOptions(spec.vocab_size, e);
  if (spec.pad_token_id) word.padding_idx(*spec.pad_token_id);
  word_embeddings_ = embeddings->register_module("word_embeddings", torch::nn::Embedding(word));
  if (spec.position_biased_input) {
    position_embeddings_ =
        embeddings->register_module("position_embeddings", torch::nn::Embedding(spec.max_position_embeddings, e));
  }
  if (spec.type_vocab_size > 0) {
    token_type_embeddings_ =
        embeddings->register_module("token_type_embeddings", torch::nn::Embedding(spec.type_vocab_size, e));
  }
  if (e != c) embed_proj_ = embeddings->register_module("embed_proj", Dense(e, c, /*with_bias=*/false));
  embeddings_norm_ = layer_norm(*embeddings, spec);
  auto encoder = level(*deberta, "encoder");
  layers_ = encoder->register_module("layer", torch::nn::ModuleList());
  for (int64_t i = 0; i < spec.num_hidden_layers; ++i) layers_->push_back(DebertaLayer(spec));
  if (spec.relative_attention) {
    rel_embeddings_ = encoder->register_module("rel_embeddings", torch::nn::Embedding(2 * spec.relative_span(), c));
  }
  // transformers builds the norm wherever norm_rel_ebd names it, relative attention or not.
  if (spec.norm_rel_ebd) rel_norm_ = layer_norm(*encoder, spec);
  if (spec.deberta_pooler()) head_dense_ = dense(*level(*this, "pooler"), "dense", c, c);  // ContextPooler
  if (spec.with_classifier) classifier_ = dense(*this, "classifier", c, spec.num_labels);
}

BertOutput BertEncoderImpl::encode_deberta(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                                           const torch::Tensor& token_type_ids) {
  if (hooks_) hooks_->before_forward(0);
  const int64_t B = input_ids.size(0), T = input_ids.size(1);
  check_length(T);
  auto x = word_embeddings_(input_ids);
  if (neftune_alpha_ > 0 && is_training()) x = add_neftune_noise(x, neftune_alpha_, T);
  if (position_embeddings_) x = x + position_embeddings_(torch::arange(T, input_ids.options()));
  if (token_type_embeddings_) {
    x = x + token_type_embeddings_(token_type_ids.defined() ? token_type_ids : torch::zeros_like(input_ids));
  }
  if (embed_proj_) x = embed_proj_(x);
  // The padding's embeddings zeroed; a query and a key attend each other where both are tokens.
  const auto tokens = attention_mask.defined() ? attention_mask.ne(0) : torch::ones_like(input_ids, torch::kBool);
  x = embeddings_norm_(x) * tokens.unsqueeze(-1).to(x.scalar_type());
  x = dropped_out(x, spec_.hidden_dropout_prob, is_training());
  const auto mask = tokens.view({B, 1, 1, T}) & tokens.view({B, 1, T, 1});
  const auto relative = deberta_relative_positions(spec_, T, input_ids.device());
  // Each layer LayerNorms the relative embeddings itself (a few rows): a checkpointed layer's
  // recomputation then holds its own graph of the norm, which one shared across the layers would
  // not survive (its backward would run through it once per layer).
  torch::nn::EmbeddingImpl* table = rel_embeddings_ ? rel_embeddings_.get() : nullptr;
  torch::nn::LayerNormImpl* norm = rel_norm_ ? rel_norm_.get() : nullptr;
  auto* layers = layers_.get();
  return {run_layers(x,
                     [layers, table, norm, mask, relative](size_t i, const torch::Tensor& h) {
                       torch::Tensor rel;
                       if (table) rel = norm ? norm->forward(table->weight) : table->weight;
                       return layers->ptr<DebertaLayerImpl>(i)->forward(h, mask, relative, rel);
                     }),
          {}};
}

}  // namespace hftrain::model
