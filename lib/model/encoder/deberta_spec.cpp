// DeBERTa-v2/v3's config.json (DebertaV2Config) to a BertSpec and back; the part of bert_spec.h's
// reader and writer that is DeBERTa's.
#include <algorithm>
#include <cctype>
#include <string>

#include "model/encoder/bert_config_common.h"
#include "model/encoder/bert_spec.h"

namespace hftrain::model {

BertSpec deberta_v3_defaults(int64_t layers) {
  BertSpec s;
  s.family = config::Encoder::kDebertaV2;
  s.vocab_size = 128100;
  s.hidden_size = 768;
  s.num_hidden_layers = layers;
  s.num_attention_heads = 12;
  s.intermediate_size = 3072;
  s.hidden_act = BertActivation::kGelu;
  s.max_position_embeddings = 512;
  s.type_vocab_size = 0;
  s.layer_norm_eps = 1e-7;
  s.hidden_dropout_prob = s.attention_probs_dropout_prob = 0.1;
  s.initializer_range = 0.02;
  s.pad_token_id = 0;
  return s;  // the DeBERTa fields' defaults are deberta-v3-base's
}

namespace bert_config {

void read_deberta(const Fields& f, BertSpec& s) {
  const Json& j = f.json();
  s.max_position_embeddings = f.positive("max_position_embeddings", 512);
  s.type_vocab_size = f.integer("type_vocab_size", 0);
  if (s.type_vocab_size < 0) f.fail("`type_vocab_size` is negative");
  s.hidden_act = read_activation(f, "hidden_act", "gelu");
  s.layer_norm_eps = f.number("layer_norm_eps", 1e-7);
  s.hidden_dropout_prob = f.number("hidden_dropout_prob", 0.1);
  s.attention_probs_dropout_prob = f.number("attention_probs_dropout_prob", 0.1);
  if (f.has("cls_dropout")) s.classifier_dropout = f.number("cls_dropout", 0.0);
  s.initializer_range = f.number("initializer_range", 0.02);
  s.pad_token_id = j.contains("pad_token_id") ? token_id(f, "pad_token_id", s.vocab_size) : int64_t{0};
  s.bos_token_id = token_id(f, "bos_token_id", s.vocab_size);
  s.eos_token_id = token_id(f, "eos_token_id", s.vocab_size);
  // DebertaV2Config's defaults where a field is absent (relative attention off, absolute positions).
  s.relative_attention = f.boolean("relative_attention", false);
  s.max_relative_positions = f.integer("max_relative_positions", -1);
  s.position_buckets = f.integer("position_buckets", -1);
  const std::string norm = f.string("norm_rel_ebd", "none");
  refuse_if(f, norm != "none" && norm != "layer_norm", "`norm_rel_ebd` is \"" + norm + "\" (none or layer_norm)");
  s.norm_rel_ebd = norm == "layer_norm";
  s.share_att_key = f.boolean("share_att_key", false);
  s.position_biased_input = f.boolean("position_biased_input", true);
  s.embedding_size = f.positive("embedding_size", s.hidden_size);
  if (s.embedding_size > (1 << 20)) f.fail("`embedding_size` is above hftrain's limit of 2^20");
  s.pooler_hidden_act = read_activation(f, "pooler_hidden_act", "gelu");
  s.pooler_dropout = f.number("pooler_dropout", 0.0);
  s.legacy = f.boolean("legacy", true);
  // pos_att_type: "p2c|c2p" (older files) or ["p2c", "c2p"]; transformers' DeBERTa-v2 computes no
  // "p2p", so neither does hftrain.
  s.c2p = s.p2c = false;
  if (f.has("pos_att_type")) {
    Json types = f.json().at("pos_att_type");
    if (types.is_string()) {
      Json list = Json::array();
      std::string text = types.get<std::string>();
      for (size_t start = 0; start <= text.size();) {
        const size_t bar = std::min(text.find('|', start), text.size());
        std::string t = text.substr(start, bar - start);
        t.erase(0, t.find_first_not_of(' '));
        t.erase(t.find_last_not_of(' ') + 1);
        for (auto& ch : t) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        list.push_back(t);
        start = bar + 1;
      }
      types = list;
    }
    if (!types.is_array()) f.fail("`pos_att_type` is not a list of c2p / p2c");
    for (const auto& t : types) {
      if (t == "c2p") {
        s.c2p = true;
      } else if (t == "p2c") {
        s.p2c = true;
      } else if (t != "p2p") {
        f.fail("`pos_att_type` holds " + t.dump() + "; DeBERTa-v2's position terms are c2p and p2c");
      }
    }
  }
  refuse_if(f, f.integer("conv_kernel_size", 0) > 0,
            "`conv_kernel_size` is set (deberta-v2-xlarge's convolution after the first layer)");
  refuse_if(f, f.has("attention_head_size") && f.positive("attention_head_size") != s.head_dim(),
            "`attention_head_size` differs from hidden_size / num_attention_heads");
  refuse_if(f, f.has("pooler_hidden_size") && f.positive("pooler_hidden_size") != s.hidden_size,
            "`pooler_hidden_size` differs from hidden_size");
  check_dropouts(f, {{"hidden_dropout_prob", s.hidden_dropout_prob},
                     {"attention_probs_dropout_prob", s.attention_probs_dropout_prob},
                     {"cls_dropout", s.classifier_dropout.value_or(0.0)},
                     {"pooler_dropout", s.pooler_dropout}});
  if (s.relative_attention) {
    const int64_t range = s.relative_range();
    if (s.position_buckets > 0 && (s.position_buckets < 4 || range - 1 == s.position_buckets / 2)) {
      f.fail("`position_buckets` " + std::to_string(s.position_buckets) +
             " gives no log buckets over `max_relative_positions` " + std::to_string(range));
    }
  }
}

OrderedJson deberta_config(const BertSpec& s) {
  OrderedJson types = OrderedJson::array();
  if (s.p2c) types.push_back("p2c");
  if (s.c2p) types.push_back("c2p");
  OrderedJson j{{"model_type", "deberta-v2"},
                {"vocab_size", s.vocab_size},
                {"hidden_size", s.hidden_size},
                {"num_hidden_layers", s.num_hidden_layers},
                {"num_attention_heads", s.num_attention_heads},
                {"intermediate_size", s.intermediate_size},
                {"hidden_act", bert_activation_name(s.hidden_act)},
                {"hidden_dropout_prob", s.hidden_dropout_prob},
                {"attention_probs_dropout_prob", s.attention_probs_dropout_prob},
                {"max_position_embeddings", s.max_position_embeddings},
                {"type_vocab_size", s.type_vocab_size},
                {"initializer_range", s.initializer_range},
                {"layer_norm_eps", s.layer_norm_eps},
                {"relative_attention", s.relative_attention},
                {"max_relative_positions", s.max_relative_positions},
                {"position_buckets", s.position_buckets},
                {"norm_rel_ebd", s.norm_rel_ebd ? "layer_norm" : "none"},
                {"share_att_key", s.share_att_key},
                {"pos_att_type", types},
                {"position_biased_input", s.position_biased_input},
                {"pooler_hidden_size", s.hidden_size},
                {"pooler_hidden_act", bert_activation_name(s.pooler_hidden_act)},
                {"pooler_dropout", s.pooler_dropout},
                {"cls_dropout", s.classifier_dropout ? OrderedJson(*s.classifier_dropout) : OrderedJson()},
                {"pad_token_id", id_or_null(s.pad_token_id)},
                {"bos_token_id", id_or_null(s.bos_token_id)},
                {"eos_token_id", id_or_null(s.eos_token_id)},
                {"legacy", s.legacy}};
  if (s.word_embedding_size() != s.hidden_size) j["embedding_size"] = s.word_embedding_size();
  return j;
}

}  // namespace bert_config
}  // namespace hftrain::model
