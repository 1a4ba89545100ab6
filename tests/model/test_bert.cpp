// BERT encoders: config.json both ways and its refusals; the model's Hugging Face parameter names
// and count; padding that changes nothing; activation checkpointing that changes no gradient; the
// loss; loading with every kind of difference listed at once, and what transformers tolerates
// (heads dropped or freshly initialised, TensorFlow's gamma/beta, either prefix).
#include "../torch_catch.h"  // first: see the file

#include <set>

#include <nlohmann/json.hpp>

#include "../config/helpers.h"
#include "encoder_checks.h"
#include "model/encoder/bert.h"
#include "model/encoder/bert_spec.h"
#include "model/encoder/bert_weights.h"
#include "util/error.h"
#include "util/fs.h"

using namespace hftrain;
using Catch::Matchers::Contains;
using Json = nlohmann::json;

namespace {

model::BertSpec tiny(bool with_classifier = true) {
  model::BertSpec s;
  s.vocab_size = 40;
  s.hidden_size = 24;
  s.num_hidden_layers = 2;
  s.num_attention_heads = 3;
  s.intermediate_size = 37;
  s.max_position_embeddings = 16;
  s.num_labels = 3;
  s.with_classifier = with_classifier;
  s.hidden_dropout_prob = s.attention_probs_dropout_prob = 0;
  return s;
}

std::string checkpoint_error(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const util::CheckpointError& e) {
    return e.what();
  }
  FAIL("expected a CheckpointError");
  return {};
}

std::string config_error(Json j) {
  return checkpoint_error([&] { model::bert_spec_from_hf_config(j.dump(), "m/config.json"); });
}

Json config_of(const model::BertSpec& s) {
  return Json::parse(model::bert_config_json(s, {"neg", "neu", "pos"}));
}

model::TensorList renamed(const model::TensorList& in,
                          const std::function<std::string(const std::string&)>& f) {
  model::TensorList out;
  for (const auto& [name, t] : in) {
    const std::string to = f(name);
    if (!to.empty()) out.emplace_back(to, t.clone());
  }
  return out;
}

}  // namespace

TEST_CASE("bert config: written config.json reads back, labels included", "[model][bert]") {
  auto s = tiny();
  s.hidden_act = model::BertActivation::kGeluTanh;
  s.classifier_dropout = 0.2;
  s.pad_token_id.reset();
  std::vector<std::string> labels;
  const auto text = model::bert_config_json(s, {"neg", "neu", "pos"});
  const auto back = model::bert_spec_from_hf_config(text, "config.json", &labels);
  CHECK(labels == std::vector<std::string>{"neg", "neu", "pos"});
  CHECK(back.vocab_size == 40);
  CHECK(back.intermediate_size == 37);
  CHECK(back.hidden_act == model::BertActivation::kGeluTanh);
  CHECK(back.classifier_dropout == 0.2);
  CHECK_FALSE(back.pad_token_id);
  CHECK(back.with_classifier);
  CHECK(back.num_labels == 3);
  CHECK(model::is_bert_config(text));
  const Json j = Json::parse(text);
  CHECK(j["architectures"][0] == "BertForSequenceClassification");
  CHECK(j["label2id"]["pos"] == 2);

  s.with_classifier = false;
  CHECK(Json::parse(model::bert_config_json(s))["architectures"][0] == "BertModel");
  CHECK_FALSE(model::bert_spec_from_hf_config(model::bert_config_json(s), "c").with_classifier);
  CHECK_THROWS_AS(model::bert_config_json(tiny(), {"a", "a", "b"}), util::UsageError);
  CHECK_THROWS_AS(model::bert_config_json(tiny(), {"a", "b"}), util::UsageError);
}

TEST_CASE("bert config: what transformers' configs may hold", "[model][bert]") {
  Json j = config_of(tiny());
  j.erase("id2label");
  j.erase("label2id");
  j["architectures"] = {"BertForMaskedLM"};
  std::vector<std::string> labels;
  const auto s = model::bert_spec_from_hf_config(j.dump(), "c", &labels);
  CHECK_FALSE(s.with_classifier);  // the encoder of a masked LM
  CHECK(labels == std::vector<std::string>{"LABEL_0", "LABEL_1"});
  j.erase("architectures");
  CHECK(model::is_bert_config(j.dump()));  // model_type alone
  j.erase("pad_token_id");
  CHECK(model::bert_spec_from_hf_config(j.dump(), "c").pad_token_id == 0);  // BertConfig's default
  CHECK_FALSE(
      model::is_bert_config(R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama"})"));
  // A BERT head hftrain lacks is still BERT's to refuse, with BERT's message.
  CHECK(model::is_bert_config(
      R"({"architectures": ["BertForQuestionAnswering"], "model_type": "bert"})"));
  CHECK_FALSE(model::is_bert_config("not json"));
}

TEST_CASE("bert config: refusals name the file and the field", "[model][bert]") {
  const Json base = config_of(tiny());
  auto with = [&](const char* key, Json value) {
    Json j = base;
    j[key] = std::move(value);
    return config_error(j);
  };
  CHECK_THAT(with("architectures", {"BertForQuestionAnswering"}),
             Contains("m/config.json") && Contains("BertForQuestionAnswering"));
  CHECK_THAT(with("position_embedding_type", "relative_key"), Contains("position_embedding_type"));
  CHECK_THAT(with("is_decoder", true), Contains("is_decoder"));
  CHECK_THAT(with("add_cross_attention", true), Contains("add_cross_attention"));
  CHECK_THAT(with("problem_type", "regression"),
             Contains("problem_type") && Contains("regression"));
  CHECK_THAT(with("problem_type", "multi_label_classification"),
             Contains("multi_label_classification"));
  CHECK_THAT(with("hidden_act", "swish"), Contains("hidden_act"));
  CHECK_THAT(with("hidden_size", -3),
             Contains("hidden_size is -3, not a positive integer"));
  CHECK_THAT(with("num_attention_heads", 5), Contains("not a multiple of `num_attention_heads`"));
  CHECK_THAT(with("pad_token_id", 40), Contains("pad_token_id 40 is outside"));
  CHECK_THAT(with("id2label", {{"0", "a"}, {"2", "b"}}), Contains("id2label"));
  CHECK_THAT(with("id2label", {{"0", "a"}}), Contains("single label"));  // transformers' regression
  CHECK_THAT(with("layer_norm_eps", "small"), Contains("layer_norm_eps is a string, not a number"));
  Json j = base;
  j.erase("vocab_size");
  CHECK_THAT(config_error(j), Contains("vocab_size is missing"));
  CHECK_THAT(checkpoint_error([] { model::bert_spec_from_hf_config("[1]", "m/config.json"); }),
             Contains("m/config.json is not a JSON object"));
}

TEST_CASE("bert model: Hugging Face names, counts and output shapes", "[model][bert]") {
  torch::manual_seed(0);
  model::BertEncoder m(tiny());
  const auto params = m->parameters_by_name();
  int64_t count = 0;
  std::set<std::string> names;
  for (const auto& [name, p] : params) {
    count += p.numel();
    names.insert(name);
  }
  CHECK(count == tiny().parameter_count());
  // zero3's units: the root, then one unit per layer, of the sizes the spec predicts.
  const auto units = m->parameter_units();
  REQUIRE(units.size() == static_cast<size_t>(1 + tiny().num_hidden_layers));
  for (size_t u = 0; u < units.size(); ++u) {
    int64_t n = 0;
    for (size_t i : units[u]) n += params[i].second.numel();
    CHECK(n == (u == 0 ? tiny().root_parameter_count() : tiny().block_parameter_count()));
  }
  for (const char* name :
       {"bert.embeddings.word_embeddings.weight", "bert.embeddings.LayerNorm.bias",
        "bert.encoder.layer.1.attention.self.query.weight",
        "bert.encoder.layer.0.attention.output.LayerNorm.weight",
        "bert.encoder.layer.0.intermediate.dense.bias", "bert.encoder.layer.1.output.dense.weight",
        "bert.pooler.dense.weight", "classifier.bias"}) {
    INFO(name);
    CHECK(names.count(name) == 1);
  }
  CHECK(params.size() == 5 + 2 * 16 + 2 + 2);
  // transformers' initialisation: the padding row zero, biases zero, LayerNorm ones.
  const auto find = [&](const std::string& name) { return m->named_parameters()[name]; };
  CHECK(find("bert.embeddings.word_embeddings.weight")[0].abs().sum().item<double>() == 0.0);
  CHECK(find("classifier.bias").abs().sum().item<double>() == 0.0);
  CHECK(find("bert.encoder.layer.0.output.LayerNorm.weight").eq(1).all().item<bool>());

  const auto ids = torch::randint(1, 40, {2, 7}, torch::kInt64);
  CHECK(m->forward(ids).sizes() == std::vector<int64_t>{2, 3});
  const auto out = m->encode(ids);
  CHECK(out.last_hidden_state.sizes() == std::vector<int64_t>{2, 7, 24});
  CHECK(out.pooled.sizes() == std::vector<int64_t>{2, 24});
  CHECK_THROWS_AS(m->forward(torch::ones({1, 17}, torch::kInt64)),
                  util::UsageError);  // > 16 positions

  model::BertEncoder base(tiny(false));
  CHECK(base->parameters_by_name().size() == params.size() - 2);
  CHECK_THROWS_AS(base->forward(ids), util::UsageError);
  CHECK(base->encode(ids).pooled.sizes() == std::vector<int64_t>{2, 24});
  auto bad = tiny();
  bad.num_attention_heads = 5;
  CHECK_THROWS_AS(model::BertEncoder(bad), util::UsageError);
}

TEST_CASE("bert model: padding changes no logit, checkpointing no gradient", "[model][bert]") {
  torch::manual_seed(1);
  model::BertEncoder m(tiny());
  m->eval();
  const auto ids = torch::tensor({{2, 7, 9, 11, 3}}, torch::kInt64);
  const auto types = torch::tensor({{0, 0, 0, 1, 1}}, torch::kInt64);
  CHECK(test::padding_difference(m, ids, 4, types) < 1e-6);
  const auto alone = m->forward(ids, torch::ones_like(ids), types);
  CHECK((alone - m->forward(ids, {}, types)).abs().max().item<double>() < 1e-6);  // no mask: all tokens

  // Activation checkpointing recomputes the same gradients.
  auto spec = tiny();
  spec.hidden_dropout_prob = 0.1;
  test::check_checkpointing_gradients(spec, test::padded(ids, 4), test::padding_mask(ids, 4));
}

TEST_CASE("bert loss: mean cross-entropy, ignore_index and label smoothing", "[model][bert]") {
  const auto logits = torch::tensor({{2.0, 0.5, -1.0}, {0.1, 0.2, 0.3}});
  const auto labels = torch::tensor({0, 2}, torch::kInt64);
  const auto lp = torch::log_softmax(logits, 1);
  const double want = -(lp[0][0].item<double>() + lp[1][2].item<double>()) / 2;
  CHECK(model::classification_loss(logits, labels).item<double>() == Approx(want));
  CHECK(
      model::classification_loss(logits, torch::tensor({0, -100}, torch::kInt64)).item<double>() ==
      Approx(-lp[0][0].item<double>()));
  const double smooth = 0.1;
  const double smoothed = (1 - smooth) * want - smooth * lp.mean(1).mean().item<double>();
  CHECK(model::classification_loss(logits, labels, smooth).item<double>() == Approx(smoothed));
}

TEST_CASE("bert weights: round trip, either prefix, and what transformers tolerates",
          "[model][bert]") {
  torch::manual_seed(4);
  model::BertEncoder source(tiny());
  const auto hf = model::to_hf_bert_weights(source);
  CHECK(hf.front().first.rfind("bert.", 0) == 0);
  const auto ids = torch::randint(1, 40, {2, 6}, torch::kInt64);
  source->eval();
  const auto want = source->forward(ids);

  torch::manual_seed(5);
  model::BertEncoder loaded(tiny());
  loaded->eval();
  auto report = model::load_bert_weights(loaded, hf);
  CHECK(report.initialised.empty());
  CHECK(report.dropped.empty());
  CHECK(report.describe().empty());
  CHECK(torch::equal(loaded->forward(ids), want));

  // A BertModel directory (no prefix, no classifier) into a classifier: the head stays fresh.
  model::BertEncoder base(tiny(false));
  const auto base_hf = model::to_hf_bert_weights(base);
  CHECK(base_hf.front().first.rfind("embeddings.", 0) == 0);
  report = model::load_bert_weights(loaded, base_hf);
  CHECK(report.initialised == std::vector<std::string>{"classifier.weight", "classifier.bias"});
  CHECK_THAT(report.describe(), Contains("classifier.weight"));
  // ... and a classifier's directory into a BertModel: the classifier is dropped.
  report = model::load_bert_weights(base, hf);
  CHECK(report.dropped == std::vector<std::string>{"classifier.bias", "classifier.weight"});

  // A BertForPreTraining checkpoint converted from TensorFlow: gamma/beta, buffers, heads, no
  // pooler.
  const auto pretraining = renamed(hf, [](const std::string& n) -> std::string {
    if (n.starts_with("classifier.") || n.starts_with("bert.pooler.")) return "";
    if (n.ends_with("LayerNorm.weight")) return n.substr(0, n.size() - 6) + "gamma";
    if (n.ends_with("LayerNorm.bias")) return n.substr(0, n.size() - 4) + "beta";
    return n;
  });
  auto with_heads = pretraining;
  with_heads.emplace_back("bert.embeddings.position_ids", torch::arange(16).unsqueeze(0));
  with_heads.emplace_back("cls.predictions.bias", torch::zeros({40}));
  with_heads.emplace_back("cls.seq_relationship.weight", torch::zeros({2, 24}));
  model::BertEncoder fresh(tiny());
  report = model::load_bert_weights(fresh, with_heads);
  CHECK(report.initialised.size() == 4);  // pooler and classifier
  CHECK(report.dropped.size() == 3);
  CHECK(torch::equal(fresh->named_parameters()["bert.encoder.layer.1.output.LayerNorm.weight"],
                     source->named_parameters()["bert.encoder.layer.1.output.LayerNorm.weight"]));
}

TEST_CASE("bert weights: every difference listed at once, parameters untouched", "[model][bert]") {
  torch::manual_seed(6);
  model::BertEncoder source(tiny());
  auto bad = renamed(model::to_hf_bert_weights(source), [](const std::string& n) -> std::string {
    if (n.find("layer.1.intermediate") != std::string::npos) return "";      // missing
    if (n == "classifier.bias") return "";                                   // half a classifier
    if (n.find("query.weight") != std::string::npos) return n + "_renamed";  // missing + unexpected
    return n;
  });
  bad.emplace_back("bert.encoder.layer.0.attention.self.extra.weight", torch::zeros({3}));
  for (auto& [name, t] : bad) {
    if (name == "bert.embeddings.token_type_embeddings.weight")
      t = torch::zeros({3, 24});  // mis-shaped
  }
  model::BertEncoder target(tiny());
  const auto before = target->named_parameters()["bert.pooler.dense.weight"].clone();
  const auto message = checkpoint_error([&] { model::load_bert_weights(target, bad); });
  CHECK_THAT(
      message,
      Contains("the Hugging Face weights does not match the BERT model its config describes"));
  CHECK_THAT(message,
             Contains("missing ") && Contains(" encoder.layer.1.intermediate.dense.weight"));
  CHECK_THAT(message, Contains("encoder.layer.*.attention.self.query.weight (in 2 layers)"));
  CHECK_THAT(message, Contains("classifier.bias"));
  CHECK_THAT(message, Contains("unexpected") && Contains("query.weight_renamed") &&
                          Contains("self.extra.weight"));
  CHECK_THAT(
      message,
      Contains("wrong shape or type bert.embeddings.token_type_embeddings.weight (Float [3, 24], "
               "expected [2, 24] floating point)"));
  CHECK(torch::equal(target->named_parameters()["bert.pooler.dense.weight"], before));

  // Another number of labels is a mis-shaped classifier.
  auto five = tiny();
  five.num_labels = 5;
  model::BertEncoder other(five);
  CHECK_THAT(
      checkpoint_error([&] { model::load_bert_weights(other, model::to_hf_bert_weights(source)); }),
      Contains("classifier.weight (Float [3, 24], expected [5, 24] floating point)"));
}

TEST_CASE("bert weights: a directory written for transformers reads back", "[model][bert]") {
  test::TempDir dir;
  torch::manual_seed(7);
  model::BertEncoder m(tiny());
  model::write_hf_bert(m, dir.path(), {"neg", "neu", "pos"},
                       4096);  // small shards: the sharded layout
  CHECK(std::filesystem::exists(dir.path() / "model.safetensors.index.json"));
  std::vector<std::string> labels;
  const auto spec = model::bert_spec_from_hf_config(
      util::read_file<util::CheckpointError>(dir.path() / "config.json", "config"), "config.json",
      &labels);
  CHECK(labels == std::vector<std::string>{"neg", "neu", "pos"});
  model::BertEncoder back(spec);
  model::load_bert_weights(back, model::StoredWeights(dir.path()));
  for (const auto& [name, p] : m->parameters_by_name()) {
    INFO(name);
    CHECK(torch::equal(back->named_parameters()[name], p));
  }
}

TEST_CASE("roberta: names, counts, positions from the padding id, head, config both ways", "[model][bert]") {
  auto spec = tiny();
  spec.family = config::Encoder::kRoberta;
  spec.pad_token_id = 1;
  spec.type_vocab_size = 1;
  CHECK(spec.max_tokens() == 14);  // 16 rows less the padding row and the one below it
  torch::manual_seed(4);
  model::BertEncoder m(spec);
  const auto params = m->parameters_by_name();
  int64_t count = 0;
  std::set<std::string> names;
  for (const auto& [name, p] : params) count += p.numel(), names.insert(name);
  CHECK(count == spec.parameter_count());
  for (const char* name :
       {"roberta.embeddings.position_embeddings.weight", "roberta.encoder.layer.1.output.dense.weight",
        "classifier.dense.weight", "classifier.out_proj.bias"}) {
    INFO(name);
    CHECK(names.count(name) == 1);
  }
  CHECK(names.count("roberta.pooler.dense.weight") == 0);  // RobertaForSequenceClassification has none
  const auto units = m->parameter_units();
  int64_t root = 0;
  for (size_t i : units[0]) root += params[i].second.numel();
  CHECK(root == spec.root_parameter_count());
  // The padding rows of both tables start at zero.
  const auto find = [&](const std::string& name) { return m->named_parameters()[name]; };
  CHECK(find("roberta.embeddings.position_embeddings.weight")[1].abs().sum().item<double>() == 0.0);

  // Positions count the tokens that are not padding: a left-padded row equals the row alone, and
  // 14 tokens fit where 15 do not.
  m->eval();
  const auto ids = torch::tensor({{0, 7, 9, 11, 2}}, torch::kInt64);
  const auto alone = m->encode(ids).last_hidden_state;
  const auto left = m->encode(torch::tensor({{1, 1, 0, 7, 9, 11, 2}}, torch::kInt64),
                              torch::tensor({{0, 0, 1, 1, 1, 1, 1}}, torch::kInt64))
                        .last_hidden_state;
  CHECK((alone[0] - left[0].narrow(0, 2, 5)).abs().max().item<double>() < 1e-5);
  CHECK(m->forward(torch::full({1, 14}, 5, torch::kInt64)).sizes() == std::vector<int64_t>{1, 3});
  CHECK_THROWS_WITH(m->forward(torch::full({1, 15}, 5, torch::kInt64)),
                    Contains("longer than the encoder's 14 positions"));

  // config.json both ways, as RobertaForSequenceClassification / RobertaModel.
  const Json j = config_of(spec);
  CHECK(j["architectures"][0] == "RobertaForSequenceClassification");
  CHECK(j["model_type"] == "roberta");
  const auto back = model::bert_spec_from_hf_config(j.dump(), "m/config.json");
  CHECK((back.roberta() && back.with_classifier && back.pad_token_id == 1 && back.type_vocab_size == 1));
  auto base = spec;
  base.with_classifier = false;
  CHECK(base.has_pooler());  // RobertaModel has one
  CHECK(Json::parse(model::bert_config_json(base))["architectures"][0] == "RobertaModel");
  // RobertaConfig's padding id is 1 by default; without one, or with one past the table, refused.
  Json no_pad = j;
  no_pad.erase("pad_token_id");
  CHECK(model::bert_spec_from_hf_config(no_pad.dump(), "m/config.json").pad_token_id == 1);
  Json null_pad = j;
  null_pad["pad_token_id"] = nullptr;
  CHECK_THAT(config_error(null_pad), Contains("RoBERTa counts positions from `pad_token_id` + 1"));
  Json far_pad = j;
  far_pad["pad_token_id"] = 15;
  CHECK_THAT(config_error(far_pad), Contains("pad_token_id"));
  Json masked_lm = j;
  masked_lm["architectures"] = {"RobertaForMaskedLM"};
  CHECK_FALSE(model::bert_spec_from_hf_config(masked_lm.dump(), "m/config.json").with_classifier);
  CHECK(model::is_bert_config(masked_lm.dump()));
  Json other = j;
  other["architectures"] = {"DebertaForSequenceClassification"};  // DeBERTa v1, which hftrain does not read
  other["model_type"] = "deberta";
  CHECK_FALSE(model::is_bert_config(other.dump()));
}

TEST_CASE("token classifiers: no pooler, the classifier on every token, config both ways", "[model][bert]") {
  for (const auto family : {config::Encoder::kBert, config::Encoder::kRoberta}) {
    auto spec = tiny();
    spec.per_token = true;
    spec.family = family;
    if (family == config::Encoder::kRoberta) spec.pad_token_id = 1, spec.type_vocab_size = 1;
    INFO(spec.architecture());
    CHECK_FALSE(spec.has_pooler());
    torch::manual_seed(5);
    model::BertEncoder m(spec);
    int64_t count = 0;
    std::set<std::string> names;
    for (const auto& [name, p] : m->parameters_by_name()) count += p.numel(), names.insert(name);
    CHECK(count == spec.parameter_count());
    CHECK((names.count("classifier.weight") == 1 && names.count("classifier.bias") == 1));
    CHECK(names.count(spec.prefix() + "pooler.dense.weight") == 0);
    m->eval();
    const auto ids = torch::randint(2, 40, {2, 7}, torch::kInt64);
    const auto logits = m->forward(ids);
    CHECK(logits.sizes() == std::vector<int64_t>{2, 7, 3});
    // Each token's logits are the classifier on its own hidden state.
    const auto hidden = m->encode(ids).last_hidden_state;
    const torch::Tensor w = m->named_parameters()["classifier.weight"];
    const torch::Tensor b = m->named_parameters()["classifier.bias"];
    CHECK(torch::allclose(logits, torch::nn::functional::linear(hidden, w, b), 1e-5, 1e-6));
    // The loss over labelled tokens only.
    auto labels = torch::full({2, 7}, -100, torch::kInt64);
    labels.index_put_({0, 1}, 2);
    labels.index_put_({1, 4}, 0);
    const auto loss = model::classification_loss(logits.reshape({-1, 3}), labels.reshape({-1}));
    const auto expected = (torch::log_softmax(logits[0][1], -1)[2] + torch::log_softmax(logits[1][4], -1)[0]) / -2.0;
    CHECK(loss.item<double>() == Approx(expected.item<double>()).epsilon(1e-6));

    const Json j = config_of(spec);
    CHECK(j["architectures"][0] == spec.architecture());
    CHECK_FALSE(j.contains("problem_type"));
    std::vector<std::string> labels_back;
    const auto back = model::bert_spec_from_hf_config(j.dump(), "m/config.json", &labels_back);
    CHECK((back.per_token && back.with_classifier && back.family == family && back.num_labels == 3));
    CHECK(labels_back == std::vector<std::string>{"neg", "neu", "pos"});
  }
  CHECK(config_of(tiny())["architectures"][0] == "BertForSequenceClassification");
}

TEST_CASE("xlm-roberta: RoBERTa's model under XLM-RoBERTa's class names, both ways", "[model][bert]") {
  auto spec = tiny();
  spec.family = config::Encoder::kRoberta;
  spec.xlm = true;
  spec.pad_token_id = 1;
  spec.type_vocab_size = 1;
  spec.per_token = true;
  const Json j = config_of(spec);
  CHECK(j["architectures"][0] == "XLMRobertaForTokenClassification");
  CHECK(j["model_type"] == "xlm-roberta");
  CHECK(model::is_bert_config(j.dump()));
  const auto back = model::bert_spec_from_hf_config(j.dump(), "m/config.json");
  CHECK((back.xlm && back.roberta() && back.per_token && back.prefix() == "roberta."));
  Json by_type = j;
  by_type.erase("architectures");
  const auto typed = model::bert_spec_from_hf_config(by_type.dump(), "m/config.json");
  CHECK((typed.xlm && typed.roberta() && !typed.with_classifier));
  CHECK(model::bert_spec_from_hf_config(config_of(tiny()).dump(), "m/config.json").xlm == false);
}
