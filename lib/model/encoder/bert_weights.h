// Hugging Face BERT, RoBERTa, ModernBERT and DeBERTa-v2 weights onto hftrain's BertEncoder (bert.h) and back. The names
// are the same on both sides but for the "bert." ("roberta.") prefix: BertForSequenceClassification
// files have it, BertModel files do not, and both load into either shape of the model. As transformers does when it
// loads a checkpoint into another head:
//  - a classifier the files lack (a BertModel or BertForMaskedLM directory fine-tuned into a
//    classifier) keeps its fresh initialisation, and so does a pooler the files lack
//    (BertForMaskedLM saves none); both are reported, not refused;
//  - pretraining heads (cls.predictions.*, cls.seq_relationship.* of BertForMaskedLM /
//    BertForPreTraining, lm_head.* of RobertaForMaskedLM), a classifier or a pooler the model has
//    no place for (RobertaForSequenceClassification has no pooler), and the buffers older files
//    carry (embeddings.position_ids, embeddings.token_type_ids) are dropped and reported;
//  - LayerNorm.gamma / LayerNorm.beta (checkpoints converted from TensorFlow) read as weight /
//  bias;
//  - ModernBERT ("model." prefix): a ModernBertForMaskedLM directory's head.{dense,norm} loads into
//    a classifier's head (the same module), its decoder.* is dropped; a ModernBertModel directory
//    has no head, which then keeps its initialisation and is reported;
//  - DeBERTa-v2 ("deberta." prefix): DebertaV2ForMaskedLM's cls.* / lm_predictions.* and the v3
//    checkpoints' mask_predictions.* are dropped, so is an absolute position table a model without
//    position_biased_input ignores; a DebertaV2Model directory has no pooler.dense (new, reported).
// Anything else missing, unexpected or mis-shaped is refused, all of it in one message.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "model/encoder/bert.h"
#include "model/weights/stored_weights.h"
#include "model/weights/weight_loader.h"

namespace hftrain::model {

// What a load did besides copying a tensor into every parameter: the classifier or pooler left
// as initialised (by our names: classifier.*, bert.pooler.*), the tensors dropped (as stored).
using BertLoadReport = WeightLoadReport;

// Copies the tensors of `hf` into the model's parameters through load_weights (weight_loader.h):
// straight from the source, every name, shape and dtype checked first. What the list above does not
// tolerate is a CheckpointError in load_weights' form (a classifier with another number of labels
// is mis-shaped: its num_labels differs); the parameters are then untouched.
BertLoadReport load_bert_weights(BertEncoder& model, const TensorSource& hf);
// The same for tensors in memory.
BertLoadReport load_bert_weights(BertEncoder& model, const TensorList& hf);

// The model's parameters under the names transformers' save_pretrained writes:
// BertForSequenceClassification's ("bert." prefix, classifier.*) for a spec with_classifier,
// BertModel's (no prefix) otherwise. Views of the parameters where they are CPU fp32 (no copy),
// else fp32 copies.
TensorList to_hf_bert_weights(const BertEncoder& model);

// Writes config.json (bert_config_json with `id2label`; empty: LABEL_i) and the weights
// (write_sharded_weights: one model.safetensors, or shards of at most `max_shard_bytes` plus the
// index; kDefaultHfShardBytes in hf_export.h is the usual limit) into the existing folder `dir`,
// each file crash-safely: a directory transformers' from_pretrained loads. Throws IoError naming
// the file, UsageError for label names config.json cannot hold.
void write_hf_bert(const BertEncoder& model, const std::filesystem::path& dir,
                   const std::vector<std::string>& id2label, uint64_t max_shard_bytes);

}  // namespace hftrain::model
