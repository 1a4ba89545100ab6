#include "model/encoder/bert.h"

#include <torch/torch.h>

#include "model/checkpointing.h"
#include "model/dense.h"
#include "model/encoder/deberta.h"
#include "model/encoder/encoder_modules.h"
#include "model/neftune.h"
#include "util/error.h"

namespace hftrain::model {
namespace F = torch::nn::functional;
using namespace encoder;  // level, dense, layer_norm, dropped_out
namespace {

using torch::nn::Module;

// One post-norm encoder layer, BertLayer.
class BertLayerImpl : public Module {
 public:
  explicit BertLayerImpl(const BertSpec& s) : spec_(s) {
    auto attention = level(*this, "attention");
    auto self = level(*attention, "self");
    query_ = dense(*self, "query", s.hidden_size, s.hidden_size);
    key_ = dense(*self, "key", s.hidden_size, s.hidden_size);
    value_ = dense(*self, "value", s.hidden_size, s.hidden_size);
    auto attention_output = level(*attention, "output");
    attention_dense_ = dense(*attention_output, "dense", s.hidden_size, s.hidden_size);
    attention_norm_ = layer_norm(*attention_output, s);
    intermediate_ = dense(*level(*this, "intermediate"), "dense", s.hidden_size, s.intermediate_size);
    auto output = level(*this, "output");
    output_dense_ = dense(*output, "dense", s.intermediate_size, s.hidden_size);
    output_norm_ = layer_norm(*output, s);
  }

  // Tensor parallelism (tensor_parallel.h): this rank's heads and intermediate units, with its
  // pieces of the layers (encoder_tp_split) in place.
  void set_tensor_parallel(TpGroup* group) {
    tp_ = group;
    heads_ /= group->size();
  }

  // x (B, T, C); mask (B, 1, 1, T) bool, true where a key may be attended, or undefined.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask) {
    const int64_t B = x.size(0), T = x.size(1), H = heads_, D = spec_.head_dim();
    const torch::Tensor in = tp_ ? tp_enter(x, *tp_) : x;
    auto heads = [&](Dense& proj) { return proj(in).view({B, T, H, D}).transpose(1, 2); };  // (B, H, T, D)
    const double p_attn = is_training() ? spec_.attention_probs_dropout_prob : 0.0;
    // An undefined tensor inside the optional is not "no mask" to sdpa: pass nullopt.
    const auto attn_mask = mask.defined() ? std::optional<torch::Tensor>(mask) : std::nullopt;
    torch::Tensor y;
    {
      const TpRngFork own_numbers(x.device(), tp_ && p_attn > 0);  // a rank's heads drop their own numbers
      y = at::scaled_dot_product_attention(heads(query_), heads(key_), heads(value_), attn_mask, p_attn,
                                           /*is_causal=*/false);
    }
    y = y.transpose(1, 2).reshape({B, T, H * D});
    const double p = spec_.hidden_dropout_prob;
    auto h = attention_norm_(dropped_out(row_parallel(attention_dense_, y), p, is_training()) + x);
    const auto f = bert_activation(intermediate_(tp_ ? tp_enter(h, *tp_) : h), spec_.hidden_act);
    return output_norm_(dropped_out(row_parallel(output_dense_, f), p, is_training()) + h);
  }

 private:
  // A layer whose input is split over the group under tensor parallelism (its columns here).
  torch::Tensor row_parallel(Dense& layer, const torch::Tensor& x) {
    return tp_ ? row_parallel_linear(x, layer->weight, layer->bias, *tp_) : layer(x);
  }

  BertSpec spec_;
  TpGroup* tp_ = nullptr;
  int64_t heads_ = spec_.num_attention_heads;  // this rank's (all of them without tensor parallelism)
  Dense query_{nullptr}, key_{nullptr}, value_{nullptr}, attention_dense_{nullptr};
  Dense intermediate_{nullptr}, output_dense_{nullptr};
  torch::nn::LayerNorm attention_norm_{nullptr}, output_norm_{nullptr};
};
TORCH_MODULE(BertLayer);

}  // namespace

BertEncoderImpl::BertEncoderImpl(const BertSpec& spec) : spec_(spec) {
  spec.validate();
  const std::string prefix = spec.prefix();
  if (spec.modernbert()) {
    auto model = level(*this, "model");
    auto embeddings = level(*model, "embeddings");
    auto word = torch::nn::EmbeddingOptions(spec.vocab_size, spec.hidden_size);
    if (spec.pad_token_id) word.padding_idx(*spec.pad_token_id);
    word_embeddings_ = embeddings->register_module("tok_embeddings", torch::nn::Embedding(word));
    norm_ = embeddings->register_module("norm", modernbert_norm(spec));
    layers_ = model->register_module("layers", torch::nn::ModuleList());
    for (int64_t i = 0; i < spec.num_hidden_layers; ++i) layers_->push_back(ModernBertLayer(spec, i));
    final_norm_ = model->register_module("final_norm", modernbert_norm(spec));
    if (spec.modernbert_head()) {  // ModernBertPredictionHead
      auto head = level(*this, "head");
      head_dense_ = head->register_module("dense", Dense(spec.hidden_size, spec.hidden_size, spec.classifier_bias));
      head_norm_ = head->register_module("norm", modernbert_norm(spec));
      classifier_ = dense(*this, "classifier", spec.hidden_size, spec.num_labels);
    }
    std::tie(rope_cos_, rope_sin_) = modernbert_rope(spec, spec.global_rope_theta);
    std::tie(rope_local_cos_, rope_local_sin_) = modernbert_rope(spec, spec.local_rope_theta);
    rope_cos_ = register_buffer("rope_cos", rope_cos_);
    rope_sin_ = register_buffer("rope_sin", rope_sin_);
    rope_local_cos_ = register_buffer("rope_local_cos", rope_local_cos_);
    rope_local_sin_ = register_buffer("rope_local_sin", rope_local_sin_);
    init_modernbert(parameters_by_name(), spec);
    return;
  }
  if (spec.deberta()) {
    build_deberta();
  } else {
    auto bert = level(*this, prefix.substr(0, prefix.size() - 1));  // "bert" or "roberta"
    auto embeddings = level(*bert, "embeddings");
    auto word = torch::nn::EmbeddingOptions(spec.vocab_size, spec.hidden_size);
    if (spec.pad_token_id) word.padding_idx(*spec.pad_token_id);  // no gradient for the pad row, as in HF
    word_embeddings_ = embeddings->register_module("word_embeddings", torch::nn::Embedding(word));
    auto positions = torch::nn::EmbeddingOptions(spec.max_position_embeddings, spec.hidden_size);
    if (spec.roberta()) positions.padding_idx(*spec.pad_token_id);  // padding's position (RobertaEmbeddings)
    position_embeddings_ = embeddings->register_module("position_embeddings", torch::nn::Embedding(positions));
    token_type_embeddings_ = embeddings->register_module("token_type_embeddings",
                                                         torch::nn::Embedding(spec.type_vocab_size, spec.hidden_size));
    embeddings_norm_ = layer_norm(*embeddings, spec);
    layers_ = level(*bert, "encoder")->register_module("layer", torch::nn::ModuleList());
    for (int64_t i = 0; i < spec.num_hidden_layers; ++i) layers_->push_back(BertLayer(spec));
    if (spec.has_pooler()) pooler_ = dense(*level(*bert, "pooler"), "dense", spec.hidden_size, spec.hidden_size);
    if (spec.roberta_head()) {  // RobertaClassificationHead
      auto head = level(*this, "classifier");
      head_dense_ = dense(*head, "dense", spec.hidden_size, spec.hidden_size);
      classifier_ = dense(*head, "out_proj", spec.hidden_size, spec.num_labels);
    } else if (spec.with_classifier) {
      classifier_ = dense(*this, "classifier", spec.hidden_size, spec.num_labels);
    }
  }
  // transformers' _init_weights: N(0, std) for Linear weights and embeddings, zero biases, the
  // padding row zero; LayerNorms keep their ones and zeros.
  torch::NoGradGuard no_grad;
  for (auto& item : named_parameters()) {
    const std::string& name = item.key();
    if (name.find("LayerNorm") != std::string::npos) continue;
    if (name.ends_with(".bias")) {
      item.value().zero_();
    } else {
      item.value().normal_(0.0, spec.initializer_range);
    }
  }
  if (spec.pad_token_id) word_embeddings_->weight[*spec.pad_token_id].zero_();
  if (spec.roberta()) position_embeddings_->weight[*spec.pad_token_id].zero_();
}

void BertEncoderImpl::set_neftune_alpha(double alpha) {
  if (alpha > 0 && spec_.modernbert()) {
    throw util::ConfigError("trainer.neftune_noise_alpha: ModernBERT's embeddings run over its unpadded tokens, "
                            "and NEFTune's noise is not added to them",
                            "set trainer.neftune_noise_alpha=0, or train a BERT, RoBERTa or DeBERTa-v2 encoder");
  }
  neftune_alpha_ = alpha;
}

torch::Tensor BertEncoderImpl::embed(const torch::Tensor& input_ids, const torch::Tensor& token_type_ids) {
  const int64_t T = input_ids.size(1);
  check_length(T);
  const auto types = token_type_ids.defined() ? token_type_ids : torch::zeros_like(input_ids);
  // Under tensor parallelism each rank looks up its rows of the vocabulary and tp_leave sums them.
  const torch::Tensor words =
      tp_ ? tp_leave(vocab_parallel_embedding(input_ids, word_embeddings_->weight, vocab_,
                                              word_embeddings_->options.padding_idx().value_or(-1)),
                     *tp_)
          : word_embeddings_(input_ids);
  auto x = (neftune_alpha_ > 0 && is_training() ? add_neftune_noise(words, neftune_alpha_, T) : words) +
           token_type_embeddings_(types);  // HF's order of the sums
  torch::Tensor positions;
  if (spec_.roberta()) {
    // pad + 1, pad + 2, ... over the non-padding tokens; the padding tokens at pad (fairseq's
    // make_positions, as RobertaEmbeddings computes them from the ids).
    const int64_t pad = *spec_.pad_token_id;
    const auto real = input_ids.ne(pad).to(torch::kInt64);
    positions = real.cumsum(1) * real + pad;
  } else {
    positions = torch::arange(T, input_ids.options().dtype(torch::kInt64));
  }
  x = x + position_embeddings_(positions);
  return dropped_out(embeddings_norm_(x), spec_.hidden_dropout_prob, is_training());  // (B, T, C)
}

void BertEncoderImpl::check_length(int64_t T) const {
  if (T > spec_.max_tokens()) {
    throw util::UsageError("a sequence of " + std::to_string(T) + " tokens is longer than the encoder's " +
                               std::to_string(spec_.max_tokens()) + " positions",
                           "truncate the inputs to the model's positions (the data's max length)");
  }
}

torch::Tensor BertEncoderImpl::run_layers(torch::Tensor x, const LayerFn& layer) {
  for (size_t i = 0; i < layers_->size(); ++i) {
    if (hooks_) hooks_->before_forward(i + 1);
    const bool checkpoint = activation_checkpointing_ && is_training() && torch::GradMode::is_enabled();
    // Frozen layers below (LoRA) leave the input without a gradient, which the reentrant
    // checkpoint needs to run the layer's backward: ask for one, as the decoder does.
    if (checkpoint && !x.requires_grad()) x = x.detach().requires_grad_(true);
    if (checkpoint) {
      x = checkpointed([layer, i](const torch::Tensor& h) { return layer(i, h); }, x);
    } else {
      x = layer(i, x);
    }
    if (hooks_) x = hooks_->after_forward(i + 1, x);
  }
  return x;
}

BertOutput BertEncoderImpl::encode(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                                   const torch::Tensor& token_type_ids) {
  if (spec_.modernbert()) return encode_modernbert(input_ids, attention_mask);
  if (spec_.deberta()) return encode_deberta(input_ids, attention_mask, token_type_ids);
  if (hooks_) hooks_->before_forward(0);
  auto x = embed(input_ids, token_type_ids);
  torch::Tensor mask;  // (B, 1, 1, T): padded keys are never attended; padded queries still compute
  if (attention_mask.defined()) mask = attention_mask.ne(0).view({input_ids.size(0), 1, 1, input_ids.size(1)});
  auto* layers = layers_.get();
  x = run_layers(
      x, [layers, mask](size_t i, const torch::Tensor& h) { return layers->ptr<BertLayerImpl>(i)->forward(h, mask); });
  torch::Tensor pooled;
  if (pooler_) pooled = torch::tanh(pooler_(x.select(1, 0)));
  return {x, pooled};
}

torch::Tensor BertEncoderImpl::forward(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                                       const torch::Tensor& token_type_ids) {
  if (!classifier_) {
    throw util::UsageError("this BERT model has no classifier (a BertModel); it computes encode(), not logits",
                           "build it with with_classifier (BertForSequenceClassification) to classify");
  }
  const BertOutput encoded = encode(input_ids, attention_mask, token_type_ids);
  const double p = spec_.classifier_dropout_prob();
  if (spec_.modernbert()) {
    const auto logits = classifier_(dropped_out(modernbert_features(encoded, attention_mask), p, is_training()));
    return hooks_ ? hooks_->after_forward(0, logits) : logits;
  }
  // A token classifier reads every token's state; a sequence classifier the pooled first token.
  torch::Tensor features = spec_.per_token ? encoded.last_hidden_state : encoded.pooled;
  if (spec_.deberta_pooler()) {  // ContextPooler: dropout, dense and its activation on the first token
    const auto first = dropped_out(encoded.last_hidden_state.select(1, 0), spec_.pooler_dropout, is_training());
    features = bert_activation(head_dense_(first), spec_.pooler_hidden_act);
  } else if (head_dense_) {  // RoBERTa: dropout, dense, tanh on the first token (<s>), then dropout again
    features = torch::tanh(head_dense_(dropped_out(encoded.last_hidden_state.select(1, 0), p, is_training())));
  }
  auto logits = classifier_(dropped_out(features, p, is_training()));  // (B, num_labels) or (B, T, num_labels)
  return hooks_ ? hooks_->after_forward(0, logits) : logits;
}

void BertEncoderImpl::tensor_parallelize(std::shared_ptr<TpGroup> group) {
  if (!group || group->size() <= 1) return;
  TORCH_CHECK(!tp_, "tensor_parallelize: the encoder is split already");
  TORCH_CHECK(!spec_.modernbert() && !spec_.deberta(), "tensor parallelism splits BERT, RoBERTa and XLM-R layers");
  keep_pieces(
      parameters_by_name(),
      [this](const std::string& name, int rank, int size) { return encoder_tp_split(spec_, name, rank, size); },
      group->rank(), group->size());
  tp_ = std::move(group);
  vocab_ = vocab_slice(spec_.vocab_size, tp_->rank(), tp_->size());
  for (size_t i = 0; i < layers_->size(); ++i) layers_->ptr<BertLayerImpl>(i)->set_tensor_parallel(tp_.get());
}

TpSplit BertEncoderImpl::tp_split(const std::string& name, int rank) const {
  return tp_ ? encoder_tp_split(spec_, name, rank, tp_->size()) : TpSplit{};
}

std::vector<std::pair<std::string, torch::Tensor>> BertEncoderImpl::parameters_by_name() const {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& item : named_parameters(/*recurse=*/true)) out.emplace_back(item.key(), item.value());
  return out;
}

ParameterUnits BertEncoderImpl::parameter_units() const {
  ParameterUnits units(static_cast<size_t>(spec_.num_hidden_layers) + 1);
  const auto params = parameters_by_name();
  const std::string layer = spec_.prefix() + (spec_.modernbert() ? "layers." : "encoder.layer.");
  for (size_t i = 0; i < params.size(); ++i) {
    const std::string& name = params[i].first;
    size_t unit = 0;
    if (name.rfind(layer, 0) == 0) {
      unit = std::stoul(name.substr(layer.size(), name.find('.', layer.size()) - layer.size())) + 1;
    }
    units[unit].push_back(i);
  }
  return units;
}

int64_t BertEncoderImpl::non_embedding_parameters() const {
  int64_t n = 0;
  for (const auto& [name, p] : parameters_by_name()) {
    if (!name.ends_with("_embeddings.weight")) n += p.numel();
  }
  return n;
}

torch::Tensor classification_loss(const torch::Tensor& logits, const torch::Tensor& labels, double label_smoothing,
                                  bool summed) {
  auto options = F::CrossEntropyFuncOptions().ignore_index(-100).label_smoothing(label_smoothing);
  if (summed) options.reduction(torch::kSum);
  return F::cross_entropy(logits.to(torch::kFloat32), labels, options);
}

}  // namespace hftrain::model
