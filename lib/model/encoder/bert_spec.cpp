#include "model/encoder/bert_spec.h"

#include <tuple>

#include <algorithm>
#include <set>
#include <string_view>

#include <nlohmann/json.hpp>

#include "model/encoder/bert_config_common.h"
#include "util/error.h"
#include "util/json_depth.h"

namespace hftrain::model {

using namespace bert_config;

namespace {

// The architecture a config names: its single "architectures" entry, else "" (model_type decides).
std::string architecture_of(const Json& j) {
  if (j.contains("architectures") && j["architectures"].is_array() && j["architectures"].size() == 1 &&
      j["architectures"][0].is_string()) {
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
  if (arch.empty() ? model_type == "modernbert" : named_in(arch, kModernBertArchitectures)) {
    return config::Encoder::kModernBert;
  }
  if (arch.empty() ? model_type == "deberta-v2" : named_in(arch, kDebertaV2Architectures)) {
    return config::Encoder::kDebertaV2;
  }
  return std::nullopt;
}

}  // namespace

namespace bert_config {

std::optional<int64_t> token_id(const Fields& f, const char* key, int64_t vocab_size) {
  const Json* v = f.find(key);
  if (!v) return std::nullopt;
  // A list (eos_token_id may name several): no single id to keep; written back as null.
  if (v->is_array() && std::string_view(key) != "pad_token_id") return std::nullopt;
  if (!v->is_number_integer()) f.fail(key, std::string("is ") + util::json_kind(*v) + ", not an integer");
  const auto id = v->get<int64_t>();
  if (id < 0 || id >= vocab_size) {
    f.fail(key, std::to_string(id) + " is outside the vocabulary of " + std::to_string(vocab_size));
  }
  return id;
}

BertActivation read_activation(const Fields& f, const char* key, const std::string& fallback) {
  const std::string act = f.string(key, fallback);
  if (act == "gelu") return BertActivation::kGelu;
  if (act == "gelu_new" || act == "gelu_pytorch_tanh") return BertActivation::kGeluTanh;
  if (act == "relu") return BertActivation::kRelu;
  refuse_if(f, true,
            std::string("`") + key + "` is \"" + act + "\" (hftrain has gelu, gelu_new, gelu_pytorch_tanh and relu)");
  return BertActivation::kGelu;
}

// id2label {"0": "neg", "1": "pos"}: keys must be the ids 0..K-1, values strings.
std::vector<std::string> read_labels(const Fields& f) {
  if (!f.has("id2label")) {
    const int64_t n = f.positive("num_labels", 2);
    std::vector<std::string> out;
    for (int64_t i = 0; i < n; ++i) out.push_back("LABEL_" + std::to_string(i));
    return out;
  }
  const Json& map = f.json().at("id2label");
  if (!map.is_object() || map.empty()) f.fail("`id2label` is not a non-empty object {\"0\": \"name\", ...}");
  std::vector<std::string> out(map.size());
  std::vector<bool> seen(map.size(), false);
  for (const auto& [key, value] : map.items()) {
    size_t id = 0;
    const bool digits = !key.empty() && key.size() < 10 &&
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

void check_dropouts(const Fields& f, std::initializer_list<std::pair<const char*, double>> dropouts) {
  for (const auto& [key, p] : dropouts) {
    if (!(p >= 0 && p < 1)) f.fail(std::string("`") + key + "` is " + std::to_string(p) + ", outside [0, 1)");
  }
}

void check_problem_type(const Fields& f, const BertSpec& s) {
  if (!s.with_classifier || s.per_token) return;
  const std::string problem = f.string("problem_type", "single_label_classification");
  refuse_if(f, problem != "single_label_classification",
            "`problem_type` is \"" + problem + "\" (hftrain trains single-label classification)");
  refuse_if(f, s.num_labels == 1, "a single label (transformers trains that as regression)");
}

std::pair<OrderedJson, OrderedJson> label_maps(const BertSpec& s, const std::vector<std::string>& id2label) {
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
  return {labels, ids};
}

}  // namespace bert_config

int64_t BertSpec::block_parameter_count() const {
  const int64_t c = hidden_size, f = intermediate_size;
  if (modernbert()) {  // the first layer's attention norm is the identity: counted as every other layer's
    const int64_t norm = norm_bias ? 2 * c : c;
    const int64_t attention = 3 * c * c + c * c + (attention_bias ? 4 * c : 0);
    const int64_t mlp = 2 * f * c + f * c + (mlp_bias ? 2 * f + c : 0);
    return 2 * norm + attention + mlp;
  }
  // q, k, v, output, LayerNorm; DeBERTa's own position projections where it does not share them.
  const int64_t positions = deberta() && relative_attention && !share_att_key ? (c2p + p2c) * (c * c + c) : 0;
  const int64_t attention = 4 * (c * c + c) + 2 * c + positions;
  const int64_t feed_forward = c * f + f + f * c + c + 2 * c;
  return attention + feed_forward;
}

int64_t BertSpec::root_parameter_count() const {
  const int64_t c = hidden_size;
  const int64_t classifier = with_classifier ? c * num_labels + num_labels : 0;
  if (modernbert()) {
    const int64_t norm = norm_bias ? 2 * c : c;
    // Token embeddings and their norm, the final norm, the head (dense and norm); less the first
    // layer's missing attention norm, which block_parameter_count counts.
    const int64_t head = modernbert_head() ? c * c + (classifier_bias ? c : 0) + norm : 0;
    return vocab_size * c + 2 * norm + head + classifier - norm;
  }
  if (deberta()) {
    const int64_t e = word_embedding_size();
    const int64_t embeddings =
        (vocab_size + (position_biased_input ? max_position_embeddings : 0) + type_vocab_size) * e +
        (e != c ? e * c : 0) + 2 * c;
    const int64_t relative = (relative_attention ? 2 * relative_span() * c : 0) + (norm_rel_ebd ? 2 * c : 0);
    return embeddings + relative + (deberta_pooler() ? c * c + c : 0) + classifier;
  }
  const int64_t embeddings = (vocab_size + max_position_embeddings + type_vocab_size) * c + 2 * c;
  const int64_t pooler = has_pooler() ? c * c + c : 0;
  // RoBERTa's head: a dense layer, then the output projection.
  return embeddings + pooler + classifier + (roberta_head() ? c * c + c : 0);
}

int64_t BertSpec::parameter_count() const {
  return root_parameter_count() + num_hidden_layers * block_parameter_count();
}

void BertSpec::validate() const {
  auto require = [](bool ok, const std::string& what) {
    if (!ok) throw util::UsageError("BERT model: " + what, "fix the model's config.json or the model.* settings");
  };
  require(vocab_size > 0 && hidden_size > 0 && num_hidden_layers > 0 && num_attention_heads > 0 &&
              intermediate_size > 0 && max_position_embeddings > 0 &&
              (type_vocab_size > 0 || modernbert() || deberta()),
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
    require(value <= limit,
            std::string(key) + " is " + std::to_string(value) + ", above hftrain's limit of " + std::to_string(limit));
  }
  require(hidden_size % num_attention_heads == 0, "hidden_size " + std::to_string(hidden_size) +
                                                      " is not a multiple of num_attention_heads " +
                                                      std::to_string(num_attention_heads));
  require(!pad_token_id || (*pad_token_id >= 0 && *pad_token_id < vocab_size),
          "pad_token_id " + std::to_string(pad_token_id.value_or(0)) + " is outside the vocabulary of " +
              std::to_string(vocab_size));
  require(!roberta() || (pad_token_id && max_tokens() >= 1),
          "RoBERTa counts positions from pad_token_id + 1: it needs a pad_token_id below max_position_embeddings - 1");
  require(!per_token || with_classifier, "per_token needs the classifier (a token classifier)");
  require(!with_classifier || num_labels >= 2,
          "a classifier needs at least 2 labels (num_labels is " + std::to_string(num_labels) + ")");
  for (double p :
       {hidden_dropout_prob, attention_probs_dropout_prob, classifier_dropout_prob(), embedding_dropout, mlp_dropout}) {
    require(p >= 0 && p < 1, "a dropout probability is " + std::to_string(p) + ", outside [0, 1)");
  }
  if (deberta()) {
    require(type_vocab_size >= 0 && embedding_size >= 0 && embedding_size <= (1 << 20),
            "type_vocab_size and embedding_size must be in [0, 2^20]");
    if (relative_attention) {
      require(relative_span() >= 1 && relative_span() <= (1 << 20),
              "the relative-position span (position_buckets, max_relative_positions) is " +
                  std::to_string(relative_span()));
      require(position_buckets <= 0 || (position_buckets >= 4 && relative_range() - 1 != position_buckets / 2),
              "position_buckets must be at least 4, and half of it differ from max_relative_positions - 1 (the "
              "log buckets' scale)");
    }
    require(pooler_dropout >= 0 && pooler_dropout < 1, "pooler_dropout is outside [0, 1)");
  }
  if (modernbert()) {
    require(static_cast<int64_t>(sliding.size()) == num_hidden_layers,
            "ModernBERT needs one layer type per layer (" + std::to_string(sliding.size()) + " for " +
                std::to_string(num_hidden_layers) + " layers)");
    require(local_attention >= 2, "local_attention " + std::to_string(local_attention) + " is below 2");
    require(global_rope_theta > 0 && local_rope_theta > 0, "the RoPE bases must be positive");
    require(initializer_cutoff_factor > 0, "initializer_cutoff_factor must be positive");
    require(head_dim() % 2 == 0, "RoPE needs an even head size, not " + std::to_string(head_dim()));
  }
  require(layer_norm_eps > 0 && initializer_range >= 0, "layer_norm_eps must be positive, initializer_range >= 0");
}

std::string BertSpec::architecture() const {
  const std::string head = !with_classifier ? "Model"
                           : per_token      ? "ForTokenClassification"
                                            : "ForSequenceClassification";
  return (xlm            ? "XLMRoberta"
          : roberta()    ? "Roberta"
          : modernbert() ? "ModernBert"
          : deberta()    ? "DebertaV2"
                         : "Bert") +
         head;
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
  const std::string type =
      j.contains("model_type") && j["model_type"].is_string() ? j["model_type"].get<std::string>() : "";
  if (type == "bert" || type == "roberta" || type == "xlm-roberta" || type == "modernbert" || type == "deberta-v2") {
    return true;
  }  // refusals then name the head
  return family_of(architecture_of(j), "").has_value();
}

BertSpec bert_spec_from_hf_config(const std::string& json_text, const std::string& source,
                                  std::vector<std::string>* id2label) {
  const Json j = util::parse_json<util::CheckpointError>(json_text, source);
  if (!j.is_object()) throw util::CheckpointError(source + " is not a JSON object", "is it a config.json?");
  const Fields f = config_fields(j, source);
  const std::string arch = architecture_of(j);
  const auto family = family_of(arch, f.string("model_type", ""));
  if (!family) {
    const std::string named = !arch.empty() ? arch : f.string("model_type", "(none)");
    f.fail("architecture `" + named + "` is not a BERT, RoBERTa, ModernBERT or DeBERTa-v2 encoder hftrain reads");
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
  if (s.hidden_size % s.num_attention_heads != 0) f.fail("`hidden_size` is not a multiple of `num_attention_heads`");
  std::vector<std::string> labels = read_labels(f);
  s.num_labels = static_cast<int64_t>(labels.size());
  check_problem_type(f, s);
  if (id2label) *id2label = labels;
  if (s.modernbert()) {
    read_modernbert(f, s);
    return s;
  }
  if (s.deberta()) {
    read_deberta(f, s);
    return s;
  }
  s.max_position_embeddings = f.positive("max_position_embeddings", 512);
  s.type_vocab_size = f.positive("type_vocab_size", 2);
  s.hidden_act = read_activation(f, "hidden_act", "gelu");
  s.layer_norm_eps = f.number("layer_norm_eps", 1e-12);
  s.hidden_dropout_prob = f.number("hidden_dropout_prob", 0.1);
  s.attention_probs_dropout_prob = f.number("attention_probs_dropout_prob", 0.1);
  if (f.has("classifier_dropout")) s.classifier_dropout = f.number("classifier_dropout", 0.0);
  s.initializer_range = f.number("initializer_range", 0.02);
  // BertConfig's default pad_token_id is 0, RobertaConfig's 1; null means no padding token.
  s.pad_token_id =
      j.contains("pad_token_id") ? token_id(f, "pad_token_id", s.vocab_size) : int64_t{s.roberta() ? 1 : 0};
  const std::string positions = f.string("position_embedding_type", "absolute");
  refuse_if(f, positions != "absolute", "`position_embedding_type` is \"" + positions + "\" (relative positions)");
  refuse_if(f, f.boolean("is_decoder", false), "`is_decoder` is true (a causal BERT decoder)");
  refuse_if(f, f.boolean("add_cross_attention", false), "`add_cross_attention` is true (cross-attention layers)");
  if (s.roberta() && (!s.pad_token_id || s.max_tokens() < 1)) {
    f.fail(
        "RoBERTa counts positions from `pad_token_id` + 1, so it needs a `pad_token_id` below "
        "`max_position_embeddings` - 1");
  }
  check_dropouts(f, {{"hidden_dropout_prob", s.hidden_dropout_prob},
                     {"attention_probs_dropout_prob", s.attention_probs_dropout_prob},
                     {"classifier_dropout", s.classifier_dropout_prob()}});
  return s;
}

std::string bert_config_json(const BertSpec& s, const std::vector<std::string>& id2label) {
  auto [labels, ids] = label_maps(s, id2label);
  OrderedJson j{{"architectures", {s.architecture()}}};
  if (s.modernbert()) {
    j.update(modernbert_config(s));
  } else if (s.deberta()) {
    j.update(deberta_config(s));
  } else {
    j.update(
        OrderedJson{{"model_type", s.xlm         ? "xlm-roberta"
                                   : s.roberta() ? "roberta"
                                                 : "bert"},
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
                    {"classifier_dropout", s.classifier_dropout ? OrderedJson(*s.classifier_dropout) : OrderedJson()},
                    {"initializer_range", s.initializer_range},
                    {"pad_token_id", s.pad_token_id ? OrderedJson(*s.pad_token_id) : OrderedJson()},
                    {"is_decoder", false},
                    {"add_cross_attention", false}});
  }
  j["id2label"] = labels;
  j["label2id"] = ids;
  if (s.with_classifier && !s.per_token) j["problem_type"] = "single_label_classification";
  j["torch_dtype"] = "float32";  // transformers 4.x
  j["dtype"] = "float32";        // 5.x
  return j.dump(2) + "\n";
}

}  // namespace hftrain::model
