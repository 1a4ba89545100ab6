// DeBERTa-v2/v3 (BertSpec::deberta()): config.json both ways (pos_att_type as a list or "c2p|p2c",
// DebertaV2Config's defaults where fields are absent) and its refusals; log-bucketed relative
// positions; the model's Hugging Face names, its parameter count as the spec and the hf_parameters
// table predict them, zero3's units; padding that changes no logit; checkpointing that changes no
// gradient; weights both ways with masked-LM heads dropped. tests/conformance/hf_deberta.py compares
// the numbers with transformers.
#include "../torch_catch.h"  // first: see the file

#include <set>

#include <nlohmann/json.hpp>

#include "encoder_checks.h"
#include "model/encoder/bert.h"
#include "model/encoder/bert_spec.h"
#include "model/encoder/bert_weights.h"
#include "model/encoder/deberta.h"
#include "model/hf/hf_modules.h"
#include "util/error.h"

using namespace hftrain;
using Catch::Matchers::Contains;
using Json = nlohmann::json;

namespace {

// DeBERTa-v3's structure at a tiny size: 8 log buckets over 20 positions.
model::BertSpec tiny(bool with_classifier = true) {
  model::BertSpec s = model::deberta_v3_defaults(2);
  s.vocab_size = 40;
  s.hidden_size = 24;
  s.num_attention_heads = 3;
  s.intermediate_size = 37;
  s.max_position_embeddings = 20;
  s.position_buckets = 8;
  s.num_labels = 3;
  s.with_classifier = with_classifier;
  s.hidden_dropout_prob = s.attention_probs_dropout_prob = 0;
  return s;
}

// DeBERTa-v2's other options: own position projections, absolute positions, token types, a
// projected embedding, no buckets.
model::BertSpec v2(bool with_classifier = true) {
  auto s = tiny(with_classifier);
  s.share_att_key = false;
  s.position_buckets = -1;
  s.max_relative_positions = 6;
  s.norm_rel_ebd = false;
  s.position_biased_input = true;
  s.type_vocab_size = 2;
  s.embedding_size = 16;
  return s;
}

}  // namespace

TEST_CASE("deberta config: both ways, older spellings, defaults and refusals", "[model][bert]") {
  auto s = v2();
  s.p2c = false;
  s.pooler_hidden_act = model::BertActivation::kRelu;
  s.classifier_dropout = 0.2;
  const Json j = Json::parse(model::bert_config_json(s, {"a", "b", "c"}));
  CHECK(j["architectures"][0] == "DebertaV2ForSequenceClassification");
  CHECK(j["model_type"] == "deberta-v2");
  CHECK(j["pos_att_type"] == Json::array({"c2p"}));
  CHECK(j["embedding_size"] == 16);
  const auto back = model::bert_spec_from_hf_config(j.dump(), "c.json");
  CHECK(back.deberta());
  CHECK((back.c2p && !back.p2c && !back.share_att_key && !back.norm_rel_ebd && back.position_biased_input));
  CHECK((back.max_relative_positions == 6 && back.position_buckets == -1 && back.type_vocab_size == 2));
  CHECK(back.word_embedding_size() == 16);
  CHECK(back.pooler_hidden_act == model::BertActivation::kRelu);
  CHECK(back.classifier_dropout == 0.2);
  CHECK(back.parameter_count() == s.parameter_count());

  // "p2c|c2p" as older files write it; "p2p", which transformers' DeBERTa-v2 does not compute, is
  // read and left out as there.
  Json old = j;
  old["pos_att_type"] = "P2C | c2p|p2p";
  const auto read = model::bert_spec_from_hf_config(old.dump(), "c.json");
  CHECK((read.c2p && read.p2c));
  // Only model_type: DebertaV2Config's defaults (no relative attention, absolute positions).
  const auto bare = model::bert_spec_from_hf_config(
      R"({"model_type": "deberta-v2", "vocab_size": 100, "hidden_size": 24, "num_hidden_layers": 2,
          "num_attention_heads": 3, "intermediate_size": 20})",
      "c.json");
  CHECK((bare.deberta() && !bare.with_classifier && !bare.relative_attention && bare.position_biased_input));
  CHECK((!bare.c2p && !bare.p2c && bare.type_vocab_size == 0 && bare.layer_norm_eps == 1e-7));

  Json conv = j;
  conv["conv_kernel_size"] = 3;
  CHECK_THAT(test::config_refusal(conv), Contains("m/config.json") && Contains("conv_kernel_size"));
  Json term = j;
  term["pos_att_type"] = Json::array({"c2p", "q2k"});
  CHECK_THAT(test::config_refusal(term), Contains("pos_att_type") && Contains("q2k"));
  Json norm = j;
  norm["norm_rel_ebd"] = "batch_norm";
  CHECK_THAT(test::config_refusal(norm), Contains("norm_rel_ebd"));
  Json head = j;
  head["attention_head_size"] = 4;
  CHECK_THAT(test::config_refusal(head), Contains("attention_head_size"));
  Json buckets = j;
  buckets["position_buckets"] = 2;
  buckets["relative_attention"] = true;
  CHECK_THAT(test::config_refusal(buckets), Contains("position_buckets"));
  Json regression = j;
  regression["problem_type"] = "regression";
  CHECK_THAT(test::config_refusal(regression), Contains("problem_type"));
}

TEST_CASE("deberta relative positions: exact near, log buckets far", "[model][bert]") {
  const auto r = model::deberta_relative_positions(tiny(), 16, torch::kCPU);
  REQUIRE(r.sizes() == std::vector<int64_t>{16, 16});
  // 8 buckets over 20 positions: |d| <= 4 as it is; beyond, 4 + ceil(log(|d| / 4) / log(19 / 4) * 3).
  for (const auto& [d, bucket] :
       std::vector<std::pair<int64_t, int64_t>>{{0, 0}, {3, 3}, {4, 4}, {5, 5}, {10, 6}, {15, 7}}) {
    INFO(d);
    CHECK(r[d][0].item<int64_t>() == bucket);
    CHECK(r[0][d].item<int64_t>() == -bucket);
  }
  auto plain = tiny();
  plain.position_buckets = -1;
  CHECK(model::deberta_relative_positions(plain, 16, torch::kCPU)[15][0].item<int64_t>() == 15);
}

TEST_CASE("deberta model: names, counts, units and the hf_parameters table", "[model][bert]") {
  for (const auto& base : {tiny(), v2()}) {
    for (bool with_classifier : {true, false}) {
      for (bool per_token : {false, true}) {
        if (per_token && !with_classifier) continue;
        auto s = base;
        s.with_classifier = with_classifier;
        s.per_token = per_token;
        INFO("v2 " << !s.share_att_key << ", classifier " << with_classifier << ", per token " << per_token);
        torch::manual_seed(0);
        model::BertEncoder m(s);
        const auto params = m->parameters_by_name();
        int64_t count = 0;
        for (const auto& [name, p] : params) count += p.numel();
        CHECK(count == s.parameter_count());
        const auto units = m->parameter_units();
        REQUIRE(units.size() == 3);
        for (size_t u = 0; u < units.size(); ++u) {
          int64_t n = 0;
          for (size_t i : units[u]) n += params[i].second.numel();
          CHECK(n == (u == 0 ? s.root_parameter_count() : s.block_parameter_count()));
        }
        const auto table = model::hf_parameters(s);
        REQUIRE(table.size() == params.size());
        for (size_t i = 0; i < params.size(); ++i) CHECK(table[i].param == params[i].first);
      }
    }
  }
  torch::manual_seed(0);
  model::BertEncoder m(v2());
  std::set<std::string> names;
  for (const auto& [name, p] : m->parameters_by_name()) names.insert(name);
  for (const char* name : {"deberta.embeddings.word_embeddings.weight", "deberta.embeddings.position_embeddings.weight",
                           "deberta.embeddings.token_type_embeddings.weight", "deberta.embeddings.embed_proj.weight",
                           "deberta.encoder.layer.1.attention.self.query_proj.weight",
                           "deberta.encoder.layer.0.attention.self.pos_key_proj.bias",
                           "deberta.encoder.layer.0.attention.self.pos_query_proj.weight",
                           "deberta.encoder.rel_embeddings.weight", "pooler.dense.weight", "classifier.bias"}) {
    INFO(name);
    CHECK(names.count(name) == 1);
  }
  CHECK(names.count("deberta.encoder.LayerNorm.weight") == 0);  // norm_rel_ebd none
  // transformers builds the relative embeddings' norm wherever norm_rel_ebd names it, relative
  // attention or not.
  auto absolute = v2();
  absolute.relative_attention = false;
  absolute.norm_rel_ebd = true;
  model::BertEncoder plain(absolute);
  int64_t count = 0;
  std::set<std::string> plain_names;
  for (const auto& [name, p] : plain->parameters_by_name()) {
    count += p.numel();
    plain_names.insert(name);
  }
  CHECK(count == absolute.parameter_count());
  CHECK((plain_names.count("deberta.encoder.LayerNorm.weight") == 1 &&
         plain_names.count("deberta.encoder.rel_embeddings.weight") == 0));
  CHECK(model::hf_parameters(absolute).size() == plain_names.size());
  // LoRA: peft's default targets, query_proj and value_proj; the pooler and classifier train in full.
  const auto linears = model::hf_linear_modules(tiny());
  CHECK(linears[0].name == "deberta.encoder.layer.0.attention.self.query_proj");
  CHECK((linears[linears.size() - 2].name == "pooler.dense" && linears[linears.size() - 2].output_layer));
  // The padding row starts at zero.
  CHECK(m->named_parameters()["deberta.embeddings.word_embeddings.weight"][0].abs().sum().item<double>() == 0.0);
}

TEST_CASE("deberta model: padding changes no logit, checkpointing no gradient", "[model][bert]") {
  for (const auto& spec : {tiny(), v2()}) {
    torch::manual_seed(1);
    model::BertEncoder m(spec);
    m->eval();
    const auto ids = torch::tensor({{2, 7, 9, 11, 13, 15, 17, 19, 21, 23, 3}}, torch::kInt64);
    const auto types = torch::tensor({{0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1}}, torch::kInt64);
    CHECK(test::padding_difference(m, ids, 4, types) < 1e-5);
  }
  auto spec = tiny();
  spec.hidden_dropout_prob = spec.attention_probs_dropout_prob = 0.1;
  const auto ids = torch::tensor({{2, 7, 9, 11, 13, 15, 17, 19, 21, 23, 3}}, torch::kInt64);
  test::check_checkpointing_gradients(spec, test::padded(ids, 2), test::padding_mask(ids, 2));
}

TEST_CASE("deberta weights: both ways, masked-LM heads and unused positions dropped", "[model][bert]") {
  torch::manual_seed(4);
  model::BertEncoder source(tiny());
  const auto hf = model::to_hf_bert_weights(source);
  torch::manual_seed(5);
  model::BertEncoder copy(tiny());
  CHECK(model::load_bert_weights(copy, hf).describe().empty());
  for (const auto& [name, p] : copy->parameters_by_name()) {
    INFO(name);
    CHECK(torch::equal(p, source->named_parameters()[name]));
  }
  // DebertaV2ForMaskedLM: the encoder, its head (legacy cls.* or lm_predictions.*) and a position
  // table the v3 model ignores, as transformers does.
  model::TensorList mlm;
  for (const auto& [name, t] : hf) {
    if (name.starts_with("deberta.")) mlm.emplace_back(name, t);
  }
  mlm.emplace_back("cls.predictions.bias", torch::zeros({40}));
  mlm.emplace_back("lm_predictions.lm_head.bias", torch::zeros({40}));
  mlm.emplace_back("mask_predictions.classifier.bias", torch::zeros({1}));  // deberta-v3-base's RTD head
  mlm.emplace_back("deberta.embeddings.position_embeddings.weight", torch::zeros({20, 24}));
  torch::manual_seed(6);
  model::BertEncoder classifier(tiny());
  const std::string report = model::load_bert_weights(classifier, mlm).describe();
  CHECK_THAT(report, Contains("cls.predictions.bias") && Contains("lm_predictions.lm_head.bias") &&
                         Contains("mask_predictions.classifier.bias") &&
                         Contains("position_embeddings") && Contains("pooler.dense.weight") &&
                         Contains("classifier.weight"));
  // DebertaV2Model's files have no "deberta." prefix.
  model::BertEncoder encoder(tiny(false));
  CHECK(model::to_hf_bert_weights(encoder).front().first == "embeddings.word_embeddings.weight");
  CHECK_THAT(model::load_bert_weights(encoder, hf).describe(), Contains("pooler.dense.weight"));
}
