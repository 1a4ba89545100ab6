// ModernBERT's config.json (ModernBertConfig, transformers 5's layer_types and rope_parameters, and
// the global_attn_every_n_layers / global_rope_theta / local_rope_theta of the files written before
// them) to a BertSpec and back; the part of bert_spec.h's reader and writer that is ModernBERT's.
#include <string>
#include <vector>

#include "model/encoder/bert_config_common.h"
#include "model/encoder/bert_spec.h"

namespace hftrain::model {

BertSpec modernbert_defaults(int64_t layers) {
  BertSpec s;
  s.family = config::Encoder::kModernBert;
  s.vocab_size = 50368;
  s.hidden_size = 768;
  s.intermediate_size = 1152;
  s.num_hidden_layers = layers;
  s.num_attention_heads = 12;
  s.hidden_act = BertActivation::kGelu;
  s.max_position_embeddings = 8192;
  s.type_vocab_size = 0;  // no token types
  s.layer_norm_eps = 1e-5;
  s.hidden_dropout_prob = 0.0;  // BERT's; ModernBERT's own dropouts follow
  s.attention_probs_dropout_prob = 0.0;
  s.classifier_dropout = 0.0;
  s.initializer_range = 0.02;
  s.pad_token_id = 50283;
  s.bos_token_id = s.cls_token_id = 50281;
  s.eos_token_id = s.sep_token_id = 50282;
  s.norm_bias = s.attention_bias = s.mlp_bias = s.classifier_bias = false;
  for (int64_t i = 0; i < layers; ++i) s.sliding.push_back(i % 3 != 0);  // global_attn_every_n_layers 3
  return s;
}

namespace bert_config {
namespace {

// The RoPE base of one layer type: rope_parameters[type].rope_theta (default RoPE only), else the
// older top-level field, else ModernBertConfig's default.
double rope_theta(const Fields& f, const char* type, const char* old_key, double fallback) {
  double theta = f.number(old_key, fallback);
  if (f.has("rope_parameters")) {
    const Json& all = f.json().at("rope_parameters");
    if (!all.is_object()) f.fail("`rope_parameters` is not an object");
    if (all.contains(type) && !all[type].is_null()) {
      const Json& p = all[type];
      if (!p.is_object()) f.fail(std::string("`rope_parameters.") + type + "` is not an object");
      // rope_type, or "type" as older files spell it.
      const char* key = p.contains("rope_type") ? "rope_type" : "type";
      if (p.contains(key) && !p[key].is_string()) {
        f.fail(std::string("`rope_parameters.") + type + "." + key + "` is not a string");
      }
      const std::string kind = p.contains(key) ? p[key].get<std::string>() : "default";
      refuse_if(f, kind != "default",
                std::string("`rope_parameters.") + type + "." + key + "` is \"" + kind +
                    "\" (hftrain's ModernBERT has default RoPE)");
      if (p.contains("rope_theta")) {
        if (!p["rope_theta"].is_number() || p["rope_theta"].get<double>() <= 0) {
          f.fail(std::string("`rope_parameters.") + type + ".rope_theta` is not a positive number");
        }
        theta = p["rope_theta"].get<double>();
      }
    }
  }
  return theta;
}

}  // namespace

void read_modernbert(const Fields& f, BertSpec& s) {
  BertSpec d = modernbert_defaults(s.num_hidden_layers);
  s.max_position_embeddings = f.positive("max_position_embeddings", d.max_position_embeddings);
  s.type_vocab_size = 0;
  s.hidden_act = read_activation(f, "hidden_activation", "gelu");
  s.classifier_activation = read_activation(f, "classifier_activation", "gelu");
  s.layer_norm_eps = f.number("norm_eps", d.layer_norm_eps);
  s.initializer_range = f.number("initializer_range", d.initializer_range);
  // Absent: 2; null: 3 (ModernBertPreTrainedModel's fallback).
  s.initializer_cutoff_factor = f.json().contains("initializer_cutoff_factor")
                                    ? f.number("initializer_cutoff_factor", 3.0)
                                    : d.initializer_cutoff_factor;
  if (!(s.initializer_cutoff_factor > 0)) f.fail("`initializer_cutoff_factor` is not positive");
  s.norm_bias = f.boolean("norm_bias", false);
  s.attention_bias = f.boolean("attention_bias", false);
  s.mlp_bias = f.boolean("mlp_bias", false);
  s.classifier_bias = f.boolean("classifier_bias", false);
  s.hidden_dropout_prob = 0.0;
  s.attention_probs_dropout_prob = f.number("attention_dropout", 0.0);
  s.embedding_dropout = f.number("embedding_dropout", 0.0);
  s.mlp_dropout = f.number("mlp_dropout", 0.0);
  s.classifier_dropout = f.number("classifier_dropout", 0.0);
  check_dropouts(f, {{"attention_dropout", s.attention_probs_dropout_prob},
                     {"embedding_dropout", s.embedding_dropout},
                     {"mlp_dropout", s.mlp_dropout},
                     {"classifier_dropout", *s.classifier_dropout}});
  const std::string pooling = f.string("classifier_pooling", "cls");
  refuse_if(f, pooling != "cls" && pooling != "mean", "`classifier_pooling` is \"" + pooling + "\" (cls or mean)");
  s.mean_pooling = pooling == "mean";
  const Json& j = f.json();
  s.pad_token_id = j.contains("pad_token_id") ? token_id(f, "pad_token_id", s.vocab_size) : d.pad_token_id;
  if (s.pad_token_id && *s.pad_token_id >= s.vocab_size) {
    f.fail("`pad_token_id` is absent, and ModernBertConfig's default 50283 is outside the vocabulary of " +
           std::to_string(s.vocab_size) + " (set pad_token_id)");
  }
  s.bos_token_id = token_id(f, "bos_token_id", s.vocab_size);
  s.eos_token_id = token_id(f, "eos_token_id", s.vocab_size);
  s.cls_token_id = token_id(f, "cls_token_id", s.vocab_size);
  s.sep_token_id = token_id(f, "sep_token_id", s.vocab_size);
  s.local_attention = f.positive("local_attention", d.local_attention);
  if (s.local_attention < 2) f.fail("`local_attention` is below 2 (a window of no neighbours)");
  if (f.has("head_dim") && f.positive("head_dim") != s.head_dim()) {
    refuse_if(f, true, "`head_dim` differs from hidden_size / num_attention_heads");
  }
  refuse_if(f, f.has("rope_scaling"), "`rope_scaling` is set (scaled RoPE)");
  s.global_rope_theta = rope_theta(f, "full_attention", "global_rope_theta", d.global_rope_theta);
  s.local_rope_theta = rope_theta(f, "sliding_attention", "local_rope_theta", d.local_rope_theta);
  if (s.global_rope_theta <= 0 || s.local_rope_theta <= 0) f.fail("a RoPE base (rope_theta) is not positive");
  if (s.head_dim() % 2 != 0) f.fail("RoPE needs an even head size (hidden_size / num_attention_heads)");
  s.sliding.clear();
  if (f.has("layer_types")) {
    const Json& types = f.json().at("layer_types");
    if (!types.is_array() || static_cast<int64_t>(types.size()) != s.num_hidden_layers) {
      f.fail("`layer_types` is not a list of one entry per layer (" + std::to_string(s.num_hidden_layers) + ")");
    }
    for (const auto& t : types) {
      if (t != "full_attention" && t != "sliding_attention") {
        f.fail("`layer_types` holds " + t.dump() + "; ModernBERT's layers are full_attention or sliding_attention");
      }
      s.sliding.push_back(t == "sliding_attention");
    }
  } else {
    const int64_t every = f.positive("global_attn_every_n_layers", 3);
    for (int64_t i = 0; i < s.num_hidden_layers; ++i) s.sliding.push_back(i % every != 0);
  }
}

OrderedJson modernbert_config(const BertSpec& s) {
  OrderedJson types = OrderedJson::array();
  for (bool sliding : s.sliding) types.push_back(sliding ? "sliding_attention" : "full_attention");
  OrderedJson j{{"model_type", "modernbert"},
                {"vocab_size", s.vocab_size},
                {"hidden_size", s.hidden_size},
                {"intermediate_size", s.intermediate_size},
                {"num_hidden_layers", s.num_hidden_layers},
                {"num_attention_heads", s.num_attention_heads},
                {"hidden_activation", bert_activation_name(s.hidden_act)},
                {"max_position_embeddings", s.max_position_embeddings},
                {"initializer_range", s.initializer_range},
                {"initializer_cutoff_factor", s.initializer_cutoff_factor},
                {"norm_eps", s.layer_norm_eps},
                {"norm_bias", s.norm_bias},
                {"pad_token_id", id_or_null(s.pad_token_id)},
                {"eos_token_id", id_or_null(s.eos_token_id)},
                {"bos_token_id", id_or_null(s.bos_token_id)},
                {"cls_token_id", id_or_null(s.cls_token_id)},
                {"sep_token_id", id_or_null(s.sep_token_id)},
                {"attention_bias", s.attention_bias},
                {"attention_dropout", s.attention_probs_dropout_prob},
                {"layer_types", types},
                {"rope_parameters",
                 {{"full_attention", {{"rope_type", "default"}, {"rope_theta", s.global_rope_theta}}},
                  {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", s.local_rope_theta}}}}},
                // transformers 4.x's names of the same (5.x reads layer_types and rope_parameters first).
                {"global_rope_theta", s.global_rope_theta},
                {"local_rope_theta", s.local_rope_theta},
                {"local_attention", s.local_attention},
                {"embedding_dropout", s.embedding_dropout},
                {"mlp_bias", s.mlp_bias},
                {"mlp_dropout", s.mlp_dropout},
                {"decoder_bias", true},
                {"classifier_pooling", s.mean_pooling ? "mean" : "cls"},
                {"classifier_dropout", s.classifier_dropout_prob()},
                {"classifier_bias", s.classifier_bias},
                {"classifier_activation", bert_activation_name(s.classifier_activation)},
                {"tie_word_embeddings", true}};
  // A periodic pattern (layer i global when i % n == 0) as transformers 4.x spells it.
  for (int64_t n = 1; n <= s.num_hidden_layers; ++n) {
    bool periodic = true;
    for (int64_t i = 0; i < s.num_hidden_layers; ++i) periodic = periodic && s.sliding[i] == (i % n != 0);
    if (periodic) {
      j["global_attn_every_n_layers"] = n;
      break;
    }
  }
  return j;
}

}  // namespace bert_config
}  // namespace hftrain::model
