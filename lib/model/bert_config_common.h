// Internal to lib/model: what the BERT-family config.json reader and writer (bert_spec.cpp),
// ModernBERT's (modernbert_spec.cpp) and DeBERTa-v2's (deberta_spec.cpp) share. Not for use outside
// lib/model.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/bert_spec.h"
#include "util/error.h"

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

// One config.json object and where it came from; every accessor names the field when it fails.
class Fields {
 public:
  Fields(const Json& j, const std::string& source) : j_(j), source_(source) {}

  [[noreturn]] void fail(const std::string& what) const { throw util::CheckpointError(source_ + ": " + what, kHint); }
  void refuse_if(bool condition, const std::string& what) const {
    if (condition) fail(what + ", which hftrain's encoder does not implement");
  }
  bool present(const char* key) const { return j_.contains(key) && !j_.at(key).is_null(); }
  const Json& at(const char* key) const { return j_.at(key); }
  const Json& json() const { return j_; }

  // A positive integer; `fallback` when absent, required when there is none.
  int64_t positive(const char* key, std::optional<int64_t> fallback = std::nullopt) const {
    if (!present(key) && fallback) return *fallback;
    if (!present(key) || !at(key).is_number_integer() || at(key).get<int64_t>() <= 0) {
      fail(std::string("`") + key + "` is missing or not a positive integer");
    }
    return at(key).get<int64_t>();
  }
  // Any integer; `fallback` when absent.
  int64_t integer(const char* key, int64_t fallback) const {
    if (!present(key)) return fallback;
    if (!at(key).is_number_integer()) fail(std::string("`") + key + "` is not an integer");
    return at(key).get<int64_t>();
  }
  double real(const char* key, double fallback) const {
    if (!present(key)) return fallback;
    if (!at(key).is_number()) fail(std::string("`") + key + "` is not a number");
    return at(key).get<double>();
  }
  bool boolean(const char* key, bool fallback) const {
    if (!present(key)) return fallback;
    if (!at(key).is_boolean()) fail(std::string("`") + key + "` is not true or false");
    return at(key).get<bool>();
  }
  std::string string(const char* key, const std::string& fallback) const {
    if (!present(key)) return fallback;
    if (!at(key).is_string()) fail(std::string("`") + key + "` is not a string");
    return at(key).get<std::string>();
  }
  // An integer token id in [0, vocab_size), or nullopt where the field is absent or null.
  std::optional<int64_t> token_id(const char* key, int64_t vocab_size) const;

 private:
  const Json& j_;
  const std::string& source_;
};

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
