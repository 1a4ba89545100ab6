// The shape of a BERT-style encoder (Hugging Face BertModel / BertForSequenceClassification) and
// its config.json both ways. Torch-free: the trainer, `plan` and the config checks read it without
// LibTorch. The model itself is bert.h, its weights bert_weights.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"

namespace hftrain::model {

// The intermediate (feed-forward) activation; config.json's hidden_act.
enum class BertActivation {
  kGelu,      // "gelu": exact, with erf (BERT's own)
  kGeluTanh,  // "gelu_new" / "gelu_pytorch_tanh": the tanh approximation
  kRelu,      // "relu"
};

// Hugging Face's BertConfig fields that change what the model computes, with its defaults
// (bert-base-uncased's shape). Field names are config.json's.
struct BertSpec {
  // BERT, or RoBERTa (RobertaModel / RobertaForSequenceClassification): parameters under
  // "roberta.", positions pad_token_id + 1, + 2, ... over the non-padding tokens (the position table
  // has the padding row too), no pooler under the classifier, whose head is
  // classifier.dense + tanh + classifier.out_proj on the first token.
  config::Encoder family = config::Encoder::kBert;
  // RoBERTa under XLM-RoBERTa's names (XLMRobertaFor..., model_type xlm-roberta): the same model.
  bool xlm = false;
  // ModernBERT (ModernBertModel / ModernBertFor{Sequence,Token}Classification), family kModernBert:
  // parameters under "model."; token embeddings and a LayerNorm (no positions, no token types);
  // pre-norm layers (the first without its attention norm) of fused Wqkv attention with RoPE and a
  // GeGLU MLP (Wi to 2 x intermediate_size, act(input) * gate, Wo); a final norm; under the
  // classifier a head (dense, classifier_activation, LayerNorm) on the pooled first token (or the
  // mean over the tokens), dropout and classifier. Its config.json fields, with ModernBertConfig's
  // defaults in modernbert_defaults():
  //   norm_bias, attention_bias, mlp_bias, classifier_bias: the biases of the LayerNorms, of Wqkv and
  //     attention Wo, of Wi and mlp Wo, of head.dense (BERT's fields have them all);
  //   sliding: per layer, true where the layer attends only within local_attention / 2 positions
  //     either side (layer_types' "sliding_attention"; global_attn_every_n_layers in older files);
  //   global_rope_theta, local_rope_theta: the RoPE bases of the full and the sliding layers;
  //   embedding_dropout, mlp_dropout; attention_probs_dropout_prob is attention_dropout (on the
  //     attention weights and after Wo); classifier_dropout; layer_norm_eps is norm_eps.
  bool norm_bias = true;
  bool attention_bias = true;
  bool mlp_bias = true;
  bool classifier_bias = true;
  BertActivation classifier_activation = BertActivation::kGelu;
  bool mean_pooling = false;  // classifier_pooling "mean": the mean of the tokens' states, not the first's
  int64_t local_attention = 128;
  std::vector<bool> sliding;
  double global_rope_theta = 160000.0;
  double local_rope_theta = 10000.0;
  double embedding_dropout = 0.0;
  double mlp_dropout = 0.0;
  double initializer_cutoff_factor = 2.0;  // truncated normal at +- this many standard deviations
  // Special token ids config.json carries (ModernBERT writes them back as read).
  std::optional<int64_t> bos_token_id, eos_token_id, cls_token_id, sep_token_id;
  // DeBERTa-v2/v3 (DebertaV2Model / DebertaV2For{Sequence,Token}Classification), family kDebertaV2:
  // BERT's post-norm layers under "deberta." whose self-attention (query_proj, key_proj, value_proj)
  // adds disentangled terms: content-to-position (c2p) and position-to-content (p2c) scores against
  // relative-position embeddings (deberta.encoder.rel_embeddings, LayerNorm'd where norm_rel_ebd),
  // projected by the layer's own query/key projections (share_att_key) or by pos_query_proj /
  // pos_key_proj; relative positions in log buckets (position_buckets > 0). Absolute positions only
  // where position_biased_input; token types where type_vocab_size > 0; word embeddings of
  // embedding_size projected by embed_proj where it differs from hidden_size. The classifier reads
  // the ContextPooler (pooler.dense + pooler_hidden_act on the first token). Fields are config.json's.
  bool relative_attention = true;
  int64_t max_relative_positions = -1;  // < 1: max_position_embeddings
  int64_t position_buckets = 256;       // <= 0: none (distances up to max_relative_positions)
  bool norm_rel_ebd = true;             // "layer_norm"
  bool share_att_key = true;
  bool c2p = true, p2c = true;          // pos_att_type
  bool position_biased_input = false;
  int64_t embedding_size = 0;           // 0: hidden_size
  BertActivation pooler_hidden_act = BertActivation::kGelu;
  double pooler_dropout = 0.0;
  bool legacy = true;                   // the masked-LM head's layout, written back as read
  int64_t vocab_size = 30522;
  int64_t hidden_size = 768;
  int64_t num_hidden_layers = 12;
  int64_t num_attention_heads = 12;
  int64_t intermediate_size = 3072;
  BertActivation hidden_act = BertActivation::kGelu;
  int64_t max_position_embeddings = 512;  // the longest input, [CLS] and [SEP] included
  int64_t type_vocab_size = 2;            // token_type_ids (segments) are in [0, type_vocab_size)
  double layer_norm_eps = 1e-12;
  double hidden_dropout_prob = 0.1;           // embeddings, attention output, feed-forward output
  double attention_probs_dropout_prob = 0.1;  // on the attention weights
  std::optional<double> classifier_dropout;   // before the classifier; unset: hidden_dropout_prob
  // The padding token: its word embedding starts at zero and gets no gradient (nn.Embedding's
  // padding_idx, as transformers builds it). Unset: none.
  std::optional<int64_t> pad_token_id = 0;
  // BertForSequenceClassification (pooler + dropout + classifier over num_labels, single-label
  // cross-entropy) when true; BertModel (the encoder and pooler only) when false.
  bool with_classifier = true;
  // With the classifier: BertForTokenClassification / RobertaForTokenClassification, the encoder
  // without a pooler, dropout and a linear classifier on every token (one label per token).
  bool per_token = false;
  int64_t num_labels = 2;
  double initializer_range = 0.02;  // N(0, initializer_range) for weights and embeddings

  int64_t head_dim() const { return hidden_size / num_attention_heads; }
  bool roberta() const { return family == config::Encoder::kRoberta; }
  bool modernbert() const { return family == config::Encoder::kModernBert; }
  bool deberta() const { return family == config::Encoder::kDebertaV2; }
  // "bert.", "roberta.", "model." or "deberta.": the prefix of the encoder's parameter names.
  std::string prefix() const {
    return roberta() ? "roberta." : modernbert() ? "model." : deberta() ? "deberta." : "bert.";
  }
  // BertModel, BertForSequenceClassification and RobertaModel have a pooler;
  // RobertaForSequenceClassification, the token classifiers, ModernBERT and DeBERTa have none.
  bool has_pooler() const { return !modernbert() && !deberta() && (!with_classifier || (!roberta() && !per_token)); }
  // DebertaV2ForSequenceClassification's ContextPooler (pooler.dense, outside "deberta.").
  bool deberta_pooler() const { return deberta() && with_classifier && !per_token; }
  // DeBERTa's largest relative distance: max_relative_positions, or max_position_embeddings where
  // it is below 1.
  int64_t relative_range() const {
    return max_relative_positions < 1 ? max_position_embeddings : max_relative_positions;
  }
  // DeBERTa's relative-position span: position_buckets, else relative_range().
  int64_t relative_span() const { return position_buckets > 0 ? position_buckets : relative_range(); }
  int64_t word_embedding_size() const { return embedding_size > 0 ? embedding_size : hidden_size; }
  // ModernBERT's classifier head (head.dense, head.norm) before the classifier.
  bool modernbert_head() const { return with_classifier && modernbert(); }
  // Layer i attends within a window (ModernBERT's local layers).
  bool sliding_layer(int64_t i) const { return modernbert() && sliding.at(static_cast<size_t>(i)); }
  // RobertaForSequenceClassification's head: classifier.dense + tanh before classifier.out_proj.
  bool roberta_head() const { return with_classifier && roberta() && !per_token; }
  // The Hugging Face class: BertModel, BertForSequenceClassification, RobertaForTokenClassification...
  std::string architecture() const;
  // The longest input: RoBERTa's positions start past the padding id.
  int64_t max_tokens() const {
    return roberta() ? max_position_embeddings - pad_token_id.value_or(0) - 1 : max_position_embeddings;
  }
  double classifier_dropout_prob() const {
    if (deberta() && per_token) return hidden_dropout_prob;  // DebertaV2ForTokenClassification's
    return classifier_dropout.value_or(hidden_dropout_prob);
  }
  // Parameters the model holds (embeddings, layers, pooler, classifier when with_classifier):
  // the root (everything outside the layers, zero3's first unit) plus the layers.
  int64_t parameter_count() const;
  int64_t block_parameter_count() const;  // one encoder layer
  int64_t root_parameter_count() const;   // embeddings, pooler, classifier
  // Throws UsageError naming the field for sizes that cannot build a model (zero or negative
  // sizes, heads that do not divide hidden_size, pad_token_id outside the vocabulary, fewer than
  // two labels with a classifier, dropout outside [0, 1)).
  void validate() const;
};

// ModernBertConfig's defaults (answerdotai/ModernBERT-base's shape: 22 layers, every third global)
// for a ModernBERT spec of `layers` layers: the sizes are left for the caller to set.
BertSpec modernbert_defaults(int64_t layers);
// DebertaV2Config as microsoft/deberta-v3-base's config.json sets it (relative attention over 256
// log buckets, shared position keys, p2c and c2p, no absolute positions or token types).
BertSpec deberta_v3_defaults(int64_t layers);

// config.json's name of an activation ("gelu", "gelu_new", "relu").
const char* bert_activation_name(BertActivation act);

// True when the config.json text is a BERT, (XLM-)RoBERTa, ModernBERT or DeBERTa-v2 model's:
// "model_type" is "bert", "roberta", "xlm-roberta", "modernbert" or "deberta-v2", or
// "architectures" names one of the architectures below. For dispatching between the model families:
// bert_spec_from_hf_config then reads it or says why not (a BERT head hftrain lacks, say). Malformed JSON: false.
bool is_bert_config(const std::string& json_text);
// The architectures bert_spec_from_hf_config accepts. BertForSequenceClassification gives a spec
// with_classifier; the others give the encoder (their heads' tensors are dropped when loading:
// cls.* of BertForMaskedLM / BertForPreTraining / BertForNextSentencePrediction).
inline constexpr const char* kBertArchitectures[] = {"BertModel", "BertForSequenceClassification",
                                                     "BertForTokenClassification", "BertForMaskedLM",
                                                     "BertForPreTraining", "BertForNextSentencePrediction"};
inline constexpr const char* kRobertaArchitectures[] = {"RobertaModel", "RobertaForSequenceClassification",
                                                        "RobertaForTokenClassification", "RobertaForMaskedLM"};
inline constexpr const char* kXlmRobertaArchitectures[] = {"XLMRobertaModel", "XLMRobertaForSequenceClassification",
                                                           "XLMRobertaForTokenClassification", "XLMRobertaForMaskedLM"};
inline constexpr const char* kDebertaV2Architectures[] = {"DebertaV2Model", "DebertaV2ForSequenceClassification",
                                                          "DebertaV2ForTokenClassification", "DebertaV2ForMaskedLM"};
inline constexpr const char* kModernBertArchitectures[] = {"ModernBertModel", "ModernBertForSequenceClassification",
                                                           "ModernBertForTokenClassification", "ModernBertForMaskedLM"};

// Reads a Hugging Face BERT, RoBERTa, ModernBERT or DeBERTa-v2 config.json (each family's config
// class's defaults: RobertaConfig's pad_token_id 1, ModernBertConfig's, DebertaV2Config's). num_labels is the size of
// id2label (transformers derives it so), else "num_labels", else 2; `id2label`, when given, receives the label names in
// id order ("LABEL_i" where the file has none). Throws CheckpointError naming `source` and the
// field for a missing or malformed field, an architecture that is not a BERT encoder, or an
// option hftrain's encoder does not implement: position_embedding_type other than "absolute",
// is_decoder, add_cross_attention, an unknown hidden_act, and for BertForSequenceClassification a
// problem_type other than single_label_classification (regression, multi-label) or one label
// (transformers' regression).
BertSpec bert_spec_from_hf_config(const std::string& json_text, const std::string& source,
                                  std::vector<std::string>* id2label = nullptr);

// config.json for `spec` (its family's fields and class names, ModernBert* and DebertaV2* too):
// BertForSequenceClassification (RobertaForSequenceClassification), or
// *ForTokenClassification with spec.per_token, with id2label / label2id from `id2label`
// (num_labels names; empty: "LABEL_i"), or BertModel (RobertaModel) when !spec.with_classifier. Loads in
// transformers' AutoConfig / from_pretrained, and bert_spec_from_hf_config reads it back to `spec`.
// Throws UsageError when id2label has the wrong size or a name twice (label2id would lose one).
std::string bert_config_json(const BertSpec& spec, const std::vector<std::string>& id2label = {});

}  // namespace hftrain::model
