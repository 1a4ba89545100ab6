// A BERT-style encoder computed as Hugging Face's BertModel / BertForSequenceClassification do:
// embeddings (word + absolute position + token type, LayerNorm, dropout), post-norm layers
// (self-attention over the unpadded positions, then a GELU/ReLU feed-forward, each followed by
// dropout, the residual and a LayerNorm), a pooler (tanh(dense) on the first token, [CLS]) and
// optionally dropout + a linear classifier. Attention goes through LibTorch's
// scaled_dot_product_attention with the padding mask as a boolean mask over the keys.
//
// Parameter names are Hugging Face's, exactly as BertForSequenceClassification's state_dict has
// them, so loading and export are a mapping without renames (bert_weights.h), and optimizer globs,
// checkpoints and HF tooling all speak the same names:
//   bert.embeddings.{word_embeddings,position_embeddings,token_type_embeddings}.weight,
//   bert.embeddings.LayerNorm.{weight,bias},
//   bert.encoder.layer.N.attention.self.{query,key,value}.{weight,bias},
//   bert.encoder.layer.N.attention.output.{dense,LayerNorm}.{weight,bias},
//   bert.encoder.layer.N.intermediate.dense.{weight,bias},
//   bert.encoder.layer.N.output.{dense,LayerNorm}.{weight,bias},
//   bert.pooler.dense.{weight,bias}, classifier.{weight,bias} (with_classifier only).
// A BertModel (spec.with_classifier false) keeps the "bert." prefix here too, so both shapes share
// their names; its Hugging Face files have no prefix, which bert_weights.h adds and strips.
// RoBERTa (spec.family): the same layers under "roberta.", positions counted from the padding id
// over the non-padding tokens, and RobertaForSequenceClassification's head without a pooler:
// classifier.dense (tanh) and classifier.out_proj on the first token. A token classifier
// (spec.per_token, *ForTokenClassification) has no pooler and applies dropout and classifier.* to
// every token. ModernBERT (spec.modernbert(), its layers in modernbert.h): parameters under "model."
// (model.embeddings.{tok_embeddings,norm}, model.layers.N.*, model.final_norm), no pooler, and under
// the classifier head.{dense,norm} and classifier.* on the first token's state (or the mean of the
// tokens' states), or on every token for a token classifier. DeBERTa-v2/v3 (spec.deberta(), its
// layers in deberta.h): parameters under "deberta." (deberta.embeddings.*, deberta.encoder.layer.N.*,
// deberta.encoder.rel_embeddings, deberta.encoder.LayerNorm) and under the sequence classifier
// pooler.dense (the ContextPooler) and classifier.*.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include "model/encoder/bert_spec.h"
#include "model/dense.h"
#include "model/encoder/modernbert.h"
#include "model/parameter_units.h"
#include "model/decoder/tensor_parallel.h"
#include "model/decoder/tp_plan.h"

namespace hftrain::model {

// What the encoder computes before the classifier (BertModel's outputs).
struct BertOutput {
  torch::Tensor last_hidden_state;  // (B, T, C), padded positions included (ModernBERT: after final_norm)
  torch::Tensor pooled;             // (B, C): tanh(pooler.dense(last_hidden_state[:, 0])); undefined
                                    // without a pooler (RobertaForSequenceClassification, ModernBERT,
                                    // DeBERTa: its ContextPooler is the classifier's)
};

class BertEncoderImpl : public torch::nn::Module {
 public:
  // Random initialisation as transformers' BertPreTrainedModel does it: weights and embeddings
  // N(0, initializer_range), biases zero, LayerNorm ones and zeros, the padding token's word
  // embedding zero; from torch's global generator (seed it first). Throws UsageError for a spec
  // that fails BertSpec::validate().
  explicit BertEncoderImpl(const BertSpec& spec);

  // input_ids (B, T) int64; attention_mask (B, T), nonzero = token, 0 = padding (undefined: all
  // tokens); token_type_ids (B, T) int64 (undefined: all 0). T <= max_position_embeddings.
  // Returns the classifier's logits (B, num_labels), a token classifier's (B, T, num_labels);
  // throws UsageError for a spec without a classifier.
  torch::Tensor forward(const torch::Tensor& input_ids, const torch::Tensor& attention_mask = {},
                        const torch::Tensor& token_type_ids = {});
  // The encoder's outputs, for BertModel (same arguments).
  BertOutput encode(const torch::Tensor& input_ids, const torch::Tensor& attention_mask = {},
                    const torch::Tensor& token_type_ids = {});

  const BertSpec& spec() const { return spec_; }
  // Recompute each layer's activations during backward instead of keeping them (training only).
  void set_activation_checkpointing(bool on) { activation_checkpointing_ = on; }
  // NEFTune (model/neftune.h) on the word embeddings while training; 0: none. Throws
  // util::ConfigError for ModernBERT, whose embeddings run over the unpadded tokens.
  void set_neftune_alpha(double alpha);
  // Parameters by name (the names above), in registration order.
  std::vector<std::pair<std::string, torch::Tensor>> parameters_by_name() const;
  // Parameters without the three embedding tables, for FLOPs estimates.
  int64_t non_embedding_parameters() const;
  // The units zero3 gathers one at a time (parameter_units.h): the root (embeddings, pooler,
  // classifier), then each layer; and the hooks forward() calls around them.
  ParameterUnits parameter_units() const;
  void set_unit_hooks(UnitHooks* hooks) { hooks_ = hooks; }
  // Tensor parallelism (BERT, RoBERTa, XLM-R layers): keeps this rank's pieces of every parameter
  // (encoder_tp_split) and splits each layer's heads and intermediate units over `group`; the
  // embeddings' vocabulary is split, the pooler and classifier stay whole. Once, after the weights
  // are in place, before the move to the device.
  void tensor_parallelize(std::shared_ptr<TpGroup> group);
  TpSplit tp_split(const std::string& name, int rank) const;

 private:
  torch::Tensor embed(const torch::Tensor& input_ids, const torch::Tensor& token_type_ids);
  // UsageError for a sequence longer than the encoder's positions.
  void check_length(int64_t T) const;
  // Layer i on the hidden states (the function a checkpointed layer recomputes, so it captures
  // what it reads by value).
  using LayerFn = std::function<torch::Tensor(size_t, const torch::Tensor&)>;
  // The layers in order, with zero3's unit hooks and activation checkpointing.
  torch::Tensor run_layers(torch::Tensor x, const LayerFn& layer);

  BertSpec spec_;
  std::shared_ptr<TpGroup> tp_;
  VocabSlice vocab_;  // the word embeddings' rows on this rank, under tp_
  bool activation_checkpointing_ = false;
  double neftune_alpha_ = 0;
  UnitHooks* hooks_ = nullptr;
  torch::nn::Embedding word_embeddings_{nullptr};  // bert.embeddings.*
  torch::nn::Embedding position_embeddings_{nullptr};
  torch::nn::Embedding token_type_embeddings_{nullptr};
  torch::nn::LayerNorm embeddings_norm_{nullptr};
  torch::nn::ModuleList layers_{nullptr};  // bert.encoder.layer
  Dense pooler_{nullptr};      // bert.pooler.dense (has_pooler)
  Dense head_dense_{nullptr};  // RoBERTa's classifier.dense
  Dense classifier_{nullptr};  // classifier (with_classifier), RoBERTa's classifier.out_proj
  // ModernBERT
  Norm norm_{nullptr};        // model.embeddings.norm
  Norm final_norm_{nullptr};  // model.final_norm
  Norm head_norm_{nullptr};   // head.norm (head_dense_ is head.dense)
  torch::Tensor rope_cos_, rope_sin_, rope_local_cos_, rope_local_sin_;  // buffers, not parameters

  BertOutput encode_modernbert(const torch::Tensor& input_ids, const torch::Tensor& attention_mask);
  // DeBERTa-v2 (deberta.h): its embeddings (absolute positions, token types and embed_proj where the
  // config has them), layers, relative embeddings and ContextPooler.
  Dense embed_proj_{nullptr};                      // deberta.embeddings.embed_proj
  torch::nn::Embedding rel_embeddings_{nullptr};  // deberta.encoder.rel_embeddings
  torch::nn::LayerNorm rel_norm_{nullptr};        // deberta.encoder.LayerNorm (norm_rel_ebd)
  void build_deberta();
  BertOutput encode_deberta(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                            const torch::Tensor& token_type_ids);
  torch::Tensor modernbert_features(const BertOutput& encoded, const torch::Tensor& attention_mask);
};
TORCH_MODULE(BertEncoder);

// Single-label classification loss, as BertForSequenceClassification computes it: the mean
// cross-entropy of logits (B, K) against labels (B) int64, in fp32; labels equal to -100 are
// left out (PyTorch's ignore_index). label_smoothing in [0, 1) as the HF Trainer's
// label_smoothing_factor. `summed`: the sum over the labelled rows instead (0 without any).
torch::Tensor classification_loss(const torch::Tensor& logits, const torch::Tensor& labels,
                                  double label_smoothing = 0.0, bool summed = false);

}  // namespace hftrain::model
