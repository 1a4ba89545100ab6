// Internal to lib/model: what the BERT-family config.json reader and writer (bert_spec.cpp),
// ModernBERT's (modernbert_spec.cpp) and DeBERTa-v2's (deberta_spec.cpp) share. Not for use outside
// lib/model.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/encoder/bert_spec.h"
#include "util/error.h"
#include "util/json_fields.h"

namespace hftrain::model::bert_config {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

constexpr const char* kHint =
    "hftrain reads BERT, RoBERTa and ModernBERT encoders: BertModel, BertForSequenceClassification (single-label), "
    "BertForTokenClassification, the encoder of BertForMaskedLM / BertForPreTraining / "
    "BertForNextSentencePrediction; RobertaModel, RobertaFor{Sequence,Token}Classification and the encoder of "
    "RobertaForMaskedLM, and the same XLMRoberta* classes; ModernBertModel, "
    "ModernBertFor{Sequence,Token}Classification and ModernBertForMaskedLM's encoder and head; DebertaV2Model, "
    "DebertaV2For{Sequence,Token}Classification and DebertaV2ForMaskedLM's encoder";

// One config.json object read field by field (util/json_fields.h): failures are CheckpointErrors
// naming the source and the key, with kHint.
using Fields = util::JsonFields;
// The reader of `j` from `source` (not copied: it outlives the reading).
inline Fields config_fields(const Json& j, const std::string& source) {
  return Fields(j, util::JsonPlace::top(source, util::ErrorKind::kCheckpoint, kHint));
}
// Fails naming `what` as something hftrain's encoder does not implement.
inline void refuse_if(const Fields& f, bool condition, const std::string& what) {
  if (condition) f.fail(what + ", which hftrain's encoder does not implement");
}
// An integer token id in [0, vocab_size), or nullopt where the field is absent or null (or, but for
// pad_token_id, a list: no single id to keep).
std::optional<int64_t> token_id(const Fields& f, const char* key, int64_t vocab_size);

// The activation named by `key` (gelu, gelu_new, gelu_pytorch_tanh, relu); refuses another.
BertActivation read_activation(const Fields& f, const char* key, const std::string& fallback);
// id2label {"0": "neg", "1": "pos"} (else num_labels, else 2, as LABEL_i).
std::vector<std::string> read_labels(const Fields& f);
// Dropout probabilities in [0, 1), each named in the message when not.
void check_dropouts(const Fields& f, std::initializer_list<std::pair<const char*, double>> dropouts);
// The classifier's problem type: single-label classification of at least two labels.
void check_problem_type(const Fields& f, const BertSpec& s);
// id2label and label2id for `s` from the names (empty: LABEL_i); UsageError for a wrong count or a
// name twice.
std::pair<OrderedJson, OrderedJson> label_maps(const BertSpec& s, const std::vector<std::string>& id2label);

// A token id for config.json: the id, or null.
inline OrderedJson id_or_null(const std::optional<int64_t>& id) { return id ? OrderedJson(*id) : OrderedJson(); }

// ModernBERT's part of bert_spec_from_hf_config and bert_config_json (modernbert_spec.cpp).
void read_modernbert(const Fields& f, BertSpec& s);
OrderedJson modernbert_config(const BertSpec& s);
// DeBERTa-v2's (deberta_spec.cpp).
void read_deberta(const Fields& f, BertSpec& s);
OrderedJson deberta_config(const BertSpec& s);

}  // namespace hftrain::model::bert_config
