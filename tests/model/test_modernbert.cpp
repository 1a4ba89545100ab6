// ModernBERT (BertSpec::modernbert()): config.json both ways (transformers 5's layer_types and
// rope_parameters, 4.x's global_attn_every_n_layers and *_rope_theta) and its refusals; the model's
// Hugging Face names, its parameter count as the spec and the hf_parameters table predict them,
// zero3's units; sliding layers that see only their window, padding that changes no logit, mean
// pooling, checkpointing that changes no gradient; weights both ways with a masked-LM head.
// tests/conformance/hf_modernbert.py compares the numbers with transformers.
#include "../torch_catch.h"  // first: see the file

#include <set>

#include <nlohmann/json.hpp>

#include "encoder_checks.h"
#include "model/encoder/bert.h"
#include "model/encoder/bert_spec.h"
#include "model/encoder/bert_weights.h"
#include "model/hf/hf_modules.h"
#include "util/error.h"

using namespace hftrain;
using Catch::Matchers::Contains;
using Json = nlohmann::json;

namespace {

model::BertSpec tiny(bool with_classifier = true, int64_t layers = 3) {
  model::BertSpec s = model::modernbert_defaults(layers);
  s.vocab_size = 40;
  s.hidden_size = 24;
  s.num_attention_heads = 3;
  s.intermediate_size = 20;
  s.max_position_embeddings = 16;
  s.local_attention = 4;
  s.pad_token_id = 0;
  s.bos_token_id = s.cls_token_id = 1;
  s.eos_token_id = s.sep_token_id = 2;
  s.num_labels = 3;
  s.with_classifier = with_classifier;
  return s;
}

int64_t numel(const model::BertEncoder& m) {
  int64_t n = 0;
  for (const auto& [name, p] : m->parameters_by_name()) n += p.numel();
  return n;
}

}  // namespace

TEST_CASE("modernbert config: both ways, transformers 4.x files and refusals", "[model][bert]") {
  auto s = tiny();
  s.norm_bias = s.mlp_bias = true;
  s.mean_pooling = true;
  s.classifier_activation = model::BertActivation::kRelu;
  s.sliding = {true, false, true};
  s.global_rope_theta = 5000;
  s.local_rope_theta = 300;
  s.mlp_dropout = 0.1;
  const Json j = Json::parse(model::bert_config_json(s, {"a", "b", "c"}));
  CHECK(j["architectures"][0] == "ModernBertForSequenceClassification");
  CHECK(j["model_type"] == "modernbert");
  CHECK(j["layer_types"] == Json::array({"sliding_attention", "full_attention", "sliding_attention"}));
  CHECK(j["rope_parameters"]["sliding_attention"]["rope_theta"] == 300.0);
  CHECK_FALSE(j.contains("global_attn_every_n_layers"));  // not periodic: the first layer slides
  std::vector<std::string> labels;
  const auto back = model::bert_spec_from_hf_config(j.dump(), "c.json", &labels);
  CHECK(back.modernbert());
  CHECK(back.sliding == s.sliding);
  CHECK(back.global_rope_theta == 5000);
  CHECK(back.local_rope_theta == 300);
  CHECK((back.norm_bias && back.mlp_bias && !back.attention_bias && !back.classifier_bias));
  CHECK(back.mean_pooling);
  CHECK(back.classifier_activation == model::BertActivation::kRelu);
  CHECK(back.mlp_dropout == 0.1);
  CHECK(back.local_attention == 4);
  CHECK(back.cls_token_id == 1);
  CHECK(back.parameter_count() == s.parameter_count());
  CHECK(labels == std::vector<std::string>{"a", "b", "c"});

  // transformers 4.x: global_attn_every_n_layers and the two theta fields, no layer_types.
  Json old = j;
  old.erase("layer_types");
  old.erase("rope_parameters");
  old["global_attn_every_n_layers"] = 2;
  old["global_rope_theta"] = 7000.0;
  old["local_rope_theta"] = 70.0;
  const auto read = model::bert_spec_from_hf_config(old.dump(), "c.json");
  CHECK(read.sliding == std::vector<bool>{false, true, false});
  CHECK(read.global_rope_theta == 7000);
  CHECK(read.local_rope_theta == 70);
  // A periodic pattern is written in both spellings.
  auto periodic = tiny();
  CHECK(Json::parse(model::bert_config_json(periodic))["global_attn_every_n_layers"] == 3);
  // Only model_type: ModernBertModel's defaults.
  const auto bare = model::bert_spec_from_hf_config(
      R"({"model_type": "modernbert", "vocab_size": 100, "hidden_size": 24, "num_hidden_layers": 4,
          "num_attention_heads": 3, "intermediate_size": 20, "pad_token_id": 0})",
      "c.json");
  CHECK((bare.modernbert() && !bare.with_classifier && bare.local_attention == 128));
  CHECK(bare.sliding == std::vector<bool>{false, true, true, false});
  CHECK(bare.global_rope_theta == 160000);

  Json scaled = j;
  scaled["rope_parameters"]["full_attention"]["rope_type"] = "linear";
  CHECK_THAT(test::config_refusal(scaled),
             Contains("m/config.json") && Contains("rope_parameters.full_attention.rope_type"));
  Json old_type = j;  // "type", as older files spell rope_type
  old_type["rope_parameters"]["sliding_attention"] = {{"type", "linear"}, {"factor", 2.0}};
  CHECK_THAT(test::config_refusal(old_type), Contains("rope_parameters.sliding_attention.type"));
  Json numeric = j;
  numeric["rope_parameters"]["full_attention"]["rope_type"] = 3;
  CHECK_THAT(test::config_refusal(numeric),
             Contains("rope_parameters.full_attention.rope_type") && Contains("not a string"));
  Json no_pad = j;
  no_pad.erase("pad_token_id");  // ModernBertConfig's 50283, past this vocabulary
  CHECK_THAT(test::config_refusal(no_pad), Contains("pad_token_id"));
  Json cutoff = j;
  cutoff["initializer_cutoff_factor"] = nullptr;  // ModernBertPreTrainedModel falls back to 3
  CHECK(model::bert_spec_from_hf_config(cutoff.dump(), "c.json").initializer_cutoff_factor == 3.0);
  cutoff["initializer_cutoff_factor"] = -1.0;
  CHECK_THAT(test::config_refusal(cutoff), Contains("initializer_cutoff_factor"));
  Json eos_list = j;
  eos_list["eos_token_id"] = Json::array({2, 3});  // several: read, not kept
  CHECK_FALSE(model::bert_spec_from_hf_config(eos_list.dump(), "c.json").eos_token_id.has_value());
  Json pooling = j;
  pooling["classifier_pooling"] = "max";
  CHECK_THAT(test::config_refusal(pooling), Contains("classifier_pooling"));
  Json types = j;
  types["layer_types"] = Json::array({"full_attention"});
  CHECK_THAT(test::config_refusal(types), Contains("layer_types"));
  Json unknown = j;
  unknown["layer_types"][1] = "chunked_attention";
  CHECK_THAT(test::config_refusal(unknown), Contains("chunked_attention"));
  Json act = j;
  act["hidden_activation"] = "silu";
  CHECK_THAT(test::config_refusal(act), Contains("hidden_activation"));
  Json regression = j;
  regression["problem_type"] = "regression";
  CHECK_THAT(test::config_refusal(regression), Contains("problem_type"));
  Json dropout = j;
  dropout["mlp_dropout"] = 1.5;
  CHECK_THAT(test::config_refusal(dropout), Contains("mlp_dropout"));
  Json pad = j;
  pad["sep_token_id"] = 400;
  CHECK_THAT(test::config_refusal(pad), Contains("sep_token_id"));
}

TEST_CASE("modernbert model: names, counts, units and the hf_parameters table", "[model][bert]") {
  for (bool with_classifier : {true, false}) {
    for (bool biases : {false, true}) {
      auto s = tiny(with_classifier);
      s.norm_bias = s.attention_bias = s.mlp_bias = s.classifier_bias = biases;
      INFO("classifier " << with_classifier << ", biases " << biases);
      torch::manual_seed(0);
      model::BertEncoder m(s);
      CHECK(numel(m) == s.parameter_count());
      const auto params = m->parameters_by_name();
      const auto units = m->parameter_units();
      REQUIRE(units.size() == 4);
      for (size_t u = 0; u < units.size(); ++u) {
        int64_t n = 0;
        for (size_t i : units[u]) n += params[i].second.numel();
        // The first layer has no attention norm: its unit is one norm short of the others.
        const int64_t norm = biases ? 48 : 24;
        CHECK(n == (u == 0 ? s.root_parameter_count() + norm : s.block_parameter_count() - (u == 1 ? norm : 0)));
      }
      const auto table = model::hf_parameters(s);
      REQUIRE(table.size() == params.size());
      for (size_t i = 0; i < params.size(); ++i) CHECK(table[i].param == params[i].first);
    }
  }
  torch::manual_seed(0);
  model::BertEncoder m(tiny());
  std::set<std::string> names;
  for (const auto& [name, p] : m->parameters_by_name()) names.insert(name);
  for (const char* name : {"model.embeddings.tok_embeddings.weight", "model.embeddings.norm.weight",
                           "model.layers.0.attn.Wqkv.weight", "model.layers.1.attn_norm.weight",
                           "model.layers.2.mlp.Wi.weight", "model.layers.2.mlp.Wo.weight", "model.final_norm.weight",
                           "head.dense.weight", "head.norm.weight", "classifier.weight", "classifier.bias"}) {
    INFO(name);
    CHECK(names.count(name) == 1);
  }
  CHECK(names.count("model.layers.0.attn_norm.weight") == 0);  // the first layer's is the identity
  CHECK(names.count("model.layers.0.attn.Wqkv.bias") == 0);
  // LoRA's targets: Wqkv, Wo, Wi, Wo per layer; the head's dense and the classifier are the output
  // layer (trained in full under modules_to_save).
  const auto linears = model::hf_linear_modules(tiny());
  REQUIRE(linears.size() == 3 * 4 + 2);
  CHECK(linears[0].name == "model.layers.0.attn.Wqkv");
  CHECK(linears[0].rows == 72);
  CHECK(linears[2].rows == 40);  // mlp.Wi: input and gate
  CHECK((linears[12].name == "head.dense" && linears[12].output_layer));
  CHECK((linears[13].name == "classifier" && linears[13].output_layer));
  // The initialisation: the padding row zero, biases zero, norms one, weights within the cutoff.
  const auto p = m->named_parameters();
  CHECK(p["model.embeddings.tok_embeddings.weight"][0].abs().sum().item<double>() == 0.0);
  CHECK(p["model.layers.1.mlp_norm.weight"].eq(1).all().item<bool>());
  CHECK(p["model.layers.0.attn.Wqkv.weight"].abs().max().item<double>() <= 2 * 0.02 + 1e-7);
  const double out_std = 0.02 / std::sqrt(6.0);
  CHECK(p["model.layers.0.mlp.Wo.weight"].abs().max().item<double>() <= 2 * out_std + 1e-7);
  CHECK(p["model.layers.0.mlp.Wo.weight"].abs().max().item<double>() > out_std);
  CHECK(p["classifier.bias"].abs().sum().item<double>() == 0.0);

  auto odd = tiny();
  odd.num_attention_heads = 8;  // head size 3: RoPE rotates pairs
  CHECK_THROWS_AS(model::BertEncoder(odd), util::UsageError);
  auto short_types = tiny();
  short_types.sliding = {true};
  CHECK_THROWS_AS(model::BertEncoder(short_types), util::UsageError);
}

TEST_CASE("modernbert model: windows, padding, mean pooling and checkpointing", "[model][bert]") {
  // One sliding layer (2 positions either side): the first token's state ignores token 6; one
  // global layer sees it.
  auto sliding = tiny(false, 1);
  sliding.sliding = {true};
  auto global = sliding;
  global.sliding = {false};
  const auto ids = torch::tensor({{3, 7, 9, 11, 13, 15, 17, 19}}, torch::kInt64);
  auto changed = ids.clone();
  changed[0][6] = 30;
  for (const auto& [spec, sees] : {std::pair{sliding, false}, std::pair{global, true}}) {
    torch::manual_seed(4);
    model::BertEncoder m(spec);
    m->eval();
    torch::NoGradGuard no_grad;
    const auto a = m->encode(ids).last_hidden_state[0][0];
    const auto b = m->encode(changed).last_hidden_state[0][0];
    CHECK(((a - b).abs().max().item<double>() > 1e-4) == sees);
  }

  // Padding changes no logit, with [CLS] pooling and with the mean over the tokens.
  for (bool mean : {false, true}) {
    auto s = tiny();
    s.mean_pooling = mean;
    torch::manual_seed(5);
    model::BertEncoder m(s);
    m->eval();
    torch::NoGradGuard no_grad;
    const auto short_ids = ids.narrow(1, 0, 5);
    const auto alone = m->forward(short_ids, torch::ones_like(short_ids));
    CHECK(test::padding_difference(m, short_ids, 3) < 1e-5);
    if (mean) {  // the mean differs from the first token's state
      auto first = s;
      first.mean_pooling = false;
      torch::manual_seed(5);
      model::BertEncoder f(first);
      f->eval();
      CHECK((alone - f->forward(short_ids, torch::ones_like(short_ids))).abs().max().item<double>() > 1e-4);
    }
  }

  // Activation checkpointing recomputes the same gradients, dropout included.
  auto spec = tiny();
  spec.attention_probs_dropout_prob = spec.mlp_dropout = spec.embedding_dropout = 0.1;
  test::check_checkpointing_gradients(spec, ids);
  // Unpadded: the tokens of a padded batch through the checkpointed layers.
  test::check_checkpointing_gradients(spec, test::padded(ids, 3), test::padding_mask(ids, 3));
}

TEST_CASE("modernbert weights: both ways, a masked-LM head loads, its decoder is dropped", "[model][bert]") {
  torch::manual_seed(8);
  model::BertEncoder source(tiny());
  const auto hf = model::to_hf_bert_weights(source);
  CHECK(hf.front().first == "model.embeddings.tok_embeddings.weight");
  torch::manual_seed(9);
  model::BertEncoder copy(tiny());
  CHECK(model::load_bert_weights(copy, hf).describe().empty());
  for (const auto& [name, p] : copy->parameters_by_name()) {
    INFO(name);
    CHECK(torch::equal(p, source->named_parameters()[name]));
  }
  // ModernBertForMaskedLM: the encoder and head, a decoder the classifier has no place for.
  model::TensorList mlm;
  for (const auto& [name, t] : hf) {
    if (!name.starts_with("classifier.")) mlm.emplace_back(name, t);
  }
  mlm.emplace_back("decoder.bias", torch::zeros({40}));
  torch::manual_seed(10);
  model::BertEncoder classifier(tiny());
  const std::string report = model::load_bert_weights(classifier, mlm).describe();
  CHECK_THAT(report, Contains("decoder.bias") && Contains("classifier.weight"));
  CHECK_THAT(report, !Contains("head."));
  CHECK(torch::equal(classifier->named_parameters()["head.dense.weight"],
                     source->named_parameters()["head.dense.weight"]));
  // ModernBertModel's files have no "model." prefix; the head is dropped from an encoder.
  model::TensorList bare;
  for (const auto& [name, t] : hf) {
    if (name.starts_with("model.")) bare.emplace_back(name.substr(6), t);
  }
  torch::manual_seed(11);
  model::BertEncoder encoder(tiny(false));
  CHECK(model::load_bert_weights(encoder, bare).describe().empty());
  CHECK(model::to_hf_bert_weights(encoder).front().first == "embeddings.tok_embeddings.weight");
  CHECK_THAT(model::load_bert_weights(encoder, hf).describe(), Contains("head.dense.weight"));
  // A mis-shaped tensor is refused, naming it.
  model::TensorList bad = hf;
  bad[3].second = torch::zeros({5});
  CHECK_THROWS_WITH(model::load_bert_weights(copy, bad), Contains(bad[3].first));
}
