#include "model/bert_spec.h"

#include <tuple>

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "util/error.h"
#include "util/json_depth.h"

namespace hftrain::model {
namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

constexpr const char* kHint =
    "hftrain reads BERT and RoBERTa encoders: BertModel, BertForSequenceClassification (single-label), the "
    "encoder of BertForMaskedLM / BertForPreTraining / BertForNextSentencePrediction; RobertaModel, "
    "RobertaForSequenceClassification, RobertaForTokenClassification and the encoder of RobertaForMaskedLM, and "
    "the same XLMRoberta* classes";

// One config.json object and where it came from; every accessor names the field when it fails.
class Fields {
 public:
  Fields(const Json& j, const std::string& source) : j_(j), source_(source) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw util::CheckpointError(source_ + ": " + what, kHint);
  }
  void refuse_if(bool condition, const std::string& what) const {
    if (condition) fail(what + ", which hftrain's BERT encoder does not implement");
  }
  bool present(const char* key) const { return j_.contains(key) && !j_.at(key).is_null(); }
  const Json& at(const char* key) const { return j_.at(key); }

  // A positive integer; `fallback` when absent, required when there is none.
  int64_t positive(const char* key, std::optional<int64_t> fallback = std::nullopt) const {
    if (!present(key) && fallback) return *fallback;
    if (!present(key) || !at(key).is_number_integer() || at(key).get<int64_t>() <= 0) {
      fail(std::string("`") + key + "` is missing or not a positive integer");
    }
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

 private:
  const Json& j_;
  const std::string& source_;
};

// The architecture a config names: its single "architectures" entry, else "" (model_type decides).
std::string architecture_of(const Json& j) {
  if (j.contains("architectures") && j["architectures"].is_array() &&
      j["architectures"].size() == 1 && j["architectures"][0].is_string()) {
    return j["architectures"][0].get<std::string>();
  }
  return "";
}

bool named_in(const std::string& arch, const auto& names) {
  return std::any_of(std::begin(names), std::end(names), [&](const char* name) { return arch == name; });
}

// XLM-RoBERTa's names for RoBERTa's model.
bool xlm_of(const std::string& arch, const std::string& model_type) {
  return arch.empty() ? model_type == "xlm-roberta" : named_in(arch, kXlmRobertaArchitectures);
}

// The encoder family an architecture or model_type names, if one hftrain reads.
std::optional<config::Encoder> family_of(const std::string& arch, const std::string& model_type) {
  if (arch.empty() ? model_type == "bert" : named_in(arch, kBertArchitectures)) return config::Encoder::kBert;
  if (arch.empty() ? model_type == "roberta" : named_in(arch, kRobertaArchitectures)) return config::Encoder::kRoberta;
  if (xlm_of(arch, model_type)) return config::Encoder::kRoberta;
  return std::nullopt;
}

BertActivation read_activation(const Fields& f) {
  const std::string act = f.string("hidden_act", "gelu");
  if (act == "gelu") return BertActivation::kGelu;
  if (act == "gelu_new" || act == "gelu_pytorch_tanh") return BertActivation::kGeluTanh;
  if (act == "relu") return BertActivation::kRelu;
  f.refuse_if(true, "`hidden_act` is \"" + act +
                        "\" (hftrain has gelu, gelu_new, gelu_pytorch_tanh and relu)");
  return BertActivation::kGelu;
}

// id2label {"0": "neg", "1": "pos"}: keys must be the ids 0..K-1, values strings.
std::vector<std::string> read_labels(const Fields& f) {
  if (!f.present("id2label")) {
    const int64_t n = f.positive("num_labels", 2);
    std::vector<std::string> out;
    for (int64_t i = 0; i < n; ++i) out.push_back("LABEL_" + std::to_string(i));
    return out;
  }
  const Json& map = f.at("id2label");
  if (!map.is_object() || map.empty())
    f.fail("`id2label` is not a non-empty object {\"0\": \"name\", ...}");
  std::vector<std::string> out(map.size());
  std::vector<bool> seen(map.size(), false);
  for (const auto& [key, value] : map.items()) {
    size_t id = 0;
    const bool digits =
        !key.empty() && key.size() < 10 &&
        std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (digits) id = std::stoul(key);
    if (!digits || id >= out.size() || seen[id] || !value.is_string()) {
      f.fail("`id2label` must map each id 0.." + std::to_string(out.size() - 1) +
             " (as a string key) to a label "
             "name; its entries do not");
    }
    seen[id] = true;
    out[id] = value.get<std::string>();
  }
  return out;
}

}  // namespace

int64_t BertSpec::block_parameter_count() const {
  const int64_t c = hidden_size;
  const int64_t attention = 4 * (c * c + c) + 2 * c;  // q, k, v, output, LayerNorm
  const int64_t feed_forward = c * intermediate_size + intermediate_size + intermediate_size * c + c + 2 * c;
  return attention + feed_forward;
}

int64_t BertSpec::root_parameter_count() const {
  const int64_t c = hidden_size;
  const int64_t embeddings = (vocab_size + max_position_embeddings + type_vocab_size) * c + 2 * c;
  const int64_t pooler = has_pooler() ? c * c + c : 0;
  // RoBERTa's head: a dense layer, then the output projection.
  const int64_t classifier = with_classifier ? c * num_labels + num_labels + (roberta_head() ? c * c + c : 0) : 0;
  return embeddings + pooler + classifier;
}

int64_t BertSpec::parameter_count() const {
  return root_parameter_count() + num_hidden_layers * block_parameter_count();
}

void BertSpec::validate() const {
  auto require = [](bool ok, const std::string& what) {
    if (!ok)
      throw util::UsageError("BERT model: " + what,
                             "fix the model's config.json or the model.* settings");
  };
  require(vocab_size > 0 && hidden_size > 0 && num_hidden_layers > 0 && num_attention_heads > 0 &&
              intermediate_size > 0 && max_position_embeddings > 0 && type_vocab_size > 0,
          "every size (vocab_size, hidden_size, num_hidden_layers, num_attention_heads, "
          "intermediate_size, "
          "max_position_embeddings, type_vocab_size) must be positive");
  // Limits far above any real BERT: past them the encoder could never be allocated.
  for (const auto& [key, value, limit] : {std::tuple<const char*, int64_t, int64_t>{"vocab_size", vocab_size, 1 << 24},
                                         {"hidden_size", hidden_size, 1 << 20},
                                         {"num_hidden_layers", num_hidden_layers, 1024},
                                         {"num_attention_heads", num_attention_heads, 1024},
                                         {"intermediate_size", intermediate_size, 1 << 22},
                                         {"max_position_embeddings", max_position_embeddings, 1 << 24},
                                         {"type_vocab_size", type_vocab_size, 1 << 16},
                                         {"num_labels", num_labels, 1 << 20}}) {
    require(value <= limit, std::string(key) + " is " + std::to_string(value) + ", above hftrain's limit of " +
                                std::to_string(limit));
  }
  require(hidden_size % num_attention_heads == 0, "hidden_size " + std::to_string(hidden_size) +
                                                      " is not a multiple of num_attention_heads " +
                                                      std::to_string(num_attention_heads));
  require(!pad_token_id || (*pad_token_id >= 0 && *pad_token_id < vocab_size),
          "pad_token_id " + std::to_string(pad_token_id.value_or(0)) +
              " is outside the vocabulary of " + std::to_string(vocab_size));
  require(!roberta() || (pad_token_id && max_tokens() >= 1),
          "RoBERTa counts positions from pad_token_id + 1: it needs a pad_token_id below max_position_embeddings - 1");
  require(!per_token || with_classifier, "per_token needs the classifier (a token classifier)");
  require(
      !with_classifier || num_labels >= 2,
      "a classifier needs at least 2 labels (num_labels is " + std::to_string(num_labels) + ")");
  for (double p : {hidden_dropout_prob, attention_probs_dropout_prob, classifier_dropout_prob()}) {
    require(p >= 0 && p < 1, "a dropout probability is " + std::to_string(p) + ", outside [0, 1)");
  }
  require(layer_norm_eps > 0 && initializer_range >= 0,
          "layer_norm_eps must be positive, initializer_range >= 0");
}

std::string BertSpec::architecture() const {
  const std::string head = !with_classifier ? "Model" : per_token ? "ForTokenClassification" : "ForSequenceClassification";
  return (xlm ? "XLMRoberta" : roberta() ? "Roberta" : "Bert") + head;
}

const char* bert_activation_name(BertActivation act) {
  switch (act) {
    case BertActivation::kGelu:
      return "gelu";
    case BertActivation::kGeluTanh:
      return "gelu_new";
    case BertActivation::kRelu:
      return "relu";
  }
  return "gelu";
}

bool is_bert_config(const std::string& json_text) {
  if (util::json_too_deep(json_text)) return false;  // not a config; its reader says why
  const Json j = Json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return false;
  const std::string type = j.contains("model_type") && j["model_type"].is_string() ? j["model_type"].get<std::string>() : "";
  if (type == "bert" || type == "roberta" || type == "xlm-roberta") return true;  // refusals then name the head
  return family_of(architecture_of(j), "").has_value();
}

BertSpec bert_spec_from_hf_config(const std::string& json_text, const std::string& source,
                                  std::vector<std::string>* id2label) {
  const Json j = util::parse_json<util::CheckpointError>(json_text, source);
  if (!j.is_object())
    throw util::CheckpointError(source + " is not a JSON object", "is it a config.json?");
  const Fields f(j, source);
  const std::string arch = architecture_of(j);
  const auto family = family_of(arch, f.string("model_type", ""));
  if (!family) {
    const std::string named = !arch.empty() ? arch : f.string("model_type", "(none)");
    f.fail("architecture `" + named + "` is not a BERT or RoBERTa encoder hftrain reads");
  }
  BertSpec s;
  s.family = *family;
  s.xlm = xlm_of(arch, f.string("model_type", ""));
  s.with_classifier = arch.ends_with("ForSequenceClassification") || arch.ends_with("ForTokenClassification");
  s.per_token = arch.ends_with("ForTokenClassification");
  s.vocab_size = f.positive("vocab_size");
  s.hidden_size = f.positive("hidden_size");
  s.num_hidden_layers = f.positive("num_hidden_layers");
  s.num_attention_heads = f.positive("num_attention_heads");
  s.intermediate_size = f.positive("intermediate_size");
  s.max_position_embeddings = f.positive("max_position_embeddings", 512);
  s.type_vocab_size = f.positive("type_vocab_size", 2);
  s.hidden_act = read_activation(f);
  s.layer_norm_eps = f.real("layer_norm_eps", 1e-12);
  s.hidden_dropout_prob = f.real("hidden_dropout_prob", 0.1);
  s.attention_probs_dropout_prob = f.real("attention_probs_dropout_prob", 0.1);
  if (f.present("classifier_dropout")) s.classifier_dropout = f.real("classifier_dropout", 0.0);
  s.initializer_range = f.real("initializer_range", 0.02);
  // BertConfig's default pad_token_id is 0, RobertaConfig's 1; null means no padding token.
  s.pad_token_id = int64_t{s.roberta() ? 1 : 0};
  if (j.contains("pad_token_id") && j["pad_token_id"].is_null()) {
    s.pad_token_id.reset();
  } else if (j.contains("pad_token_id")) {
    if (!j["pad_token_id"].is_number_integer()) f.fail("`pad_token_id` is not an integer");
    s.pad_token_id = j["pad_token_id"].get<int64_t>();
    if (*s.pad_token_id < 0 || *s.pad_token_id >= s.vocab_size) {
      f.fail("`pad_token_id` " + std::to_string(*s.pad_token_id) +
             " is outside the vocabulary of " + std::to_string(s.vocab_size));
    }
  }
  const std::string positions = f.string("position_embedding_type", "absolute");
  f.refuse_if(positions != "absolute",
              "`position_embedding_type` is \"" + positions + "\" (relative positions)");
  f.refuse_if(f.boolean("is_decoder", false), "`is_decoder` is true (a causal BERT decoder)");
  f.refuse_if(f.boolean("add_cross_attention", false),
              "`add_cross_attention` is true (cross-attention layers)");
  if (s.hidden_size % s.num_attention_heads != 0)
    f.fail("`hidden_size` is not a multiple of `num_attention_heads`");
  if (s.roberta() && (!s.pad_token_id || s.max_tokens() < 1)) {
    f.fail("RoBERTa counts positions from `pad_token_id` + 1, so it needs a `pad_token_id` below "
           "`max_position_embeddings` - 1");
  }

  std::vector<std::string> labels = read_labels(f);
  s.num_labels = static_cast<int64_t>(labels.size());
  if (s.with_classifier && !s.per_token) {
    const std::string problem = f.string("problem_type", "single_label_classification");
    f.refuse_if(
        problem != "single_label_classification",
        "`problem_type` is \"" + problem + "\" (hftrain trains single-label classification)");
    f.refuse_if(s.num_labels == 1, "a single label (transformers trains that as regression)");
  }
  for (double p :
       {s.hidden_dropout_prob, s.attention_probs_dropout_prob, s.classifier_dropout_prob()}) {
    if (!(p >= 0 && p < 1))
      f.fail("a dropout probability is " + std::to_string(p) + ", outside [0, 1)");
  }
  if (id2label) *id2label = std::move(labels);
  return s;
}

std::string bert_config_json(const BertSpec& s, const std::vector<std::string>& id2label) {
  std::vector<std::string> names = id2label;
  if (names.empty()) {
    for (int64_t i = 0; i < s.num_labels; ++i) names.push_back("LABEL_" + std::to_string(i));
  }
  if (static_cast<int64_t>(names.size()) != s.num_labels) {
    throw util::UsageError("the model has " + std::to_string(s.num_labels) + " labels but " +
                           std::to_string(names.size()) + " label names were given");
  }
  if (std::set<std::string>(names.begin(), names.end()).size() != names.size()) {
    throw util::UsageError("two labels share a name, which config.json's label2id cannot hold",
                           "give every label a distinct name");
  }
  OrderedJson labels = OrderedJson::object(), ids = OrderedJson::object();
  for (size_t i = 0; i < names.size(); ++i) {
    labels[std::to_string(i)] = names[i];
    ids[names[i]] = i;
  }
  OrderedJson j{
      {"architectures", {s.architecture()}},
      {"model_type", s.xlm ? "xlm-roberta" : s.roberta() ? "roberta" : "bert"},
      {"vocab_size", s.vocab_size},
      {"hidden_size", s.hidden_size},
      {"num_hidden_layers", s.num_hidden_layers},
      {"num_attention_heads", s.num_attention_heads},
      {"intermediate_size", s.intermediate_size},
      {"hidden_act", bert_activation_name(s.hidden_act)},
      {"max_position_embeddings", s.max_position_embeddings},
      {"type_vocab_size", s.type_vocab_size},
      {"position_embedding_type", "absolute"},  // transformers 4.x reads it; 5.x ignores it
      {"layer_norm_eps", s.layer_norm_eps},
      {"hidden_dropout_prob", s.hidden_dropout_prob},
      {"attention_probs_dropout_prob", s.attention_probs_dropout_prob},
      {"classifier_dropout",
       s.classifier_dropout ? OrderedJson(*s.classifier_dropout) : OrderedJson()},
      {"initializer_range", s.initializer_range},
      {"pad_token_id", s.pad_token_id ? OrderedJson(*s.pad_token_id) : OrderedJson()},
      {"is_decoder", false},
      {"add_cross_attention", false},
      {"id2label", labels},
      {"label2id", ids}};
  if (s.with_classifier && !s.per_token) j["problem_type"] = "single_label_classification";
  j["torch_dtype"] = "float32";  // transformers 4.x
  j["dtype"] = "float32";        // 5.x
  return j.dump(2) + "\n";
}

}  // namespace hftrain::model
