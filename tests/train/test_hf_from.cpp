// model.from with a Hugging Face directory: config.json read into the model's spec (what the
// conformance fixtures, written by transformers' save_pretrained, describe), unsupported options
// refused by name, and a shape mismatch answered with the overrides to use.
#include "../torch_catch.h"  // first: see the file

#include "../config/helpers.h"
#include "model/encoder/bert.h"
#include "model/encoder/bert_weights.h"
#include "model/hf/hf_config.h"
#include "model/hf/hf_export.h"
#include "train/build/model_from.h"
#include "train/trainer.h"
#include "train/build/wiring.h"
#include "util/fs.h"

using namespace hftrain;
using Catch::Matchers::Contains;

namespace {

std::string fixture_text(const std::string& rel) {
  return util::read_file<util::CheckpointError>(std::string(HFTRAIN_TEST_FIXTURES_DIR) + "/" + rel, "fixture");
}

}  // namespace

TEST_CASE("config.json of transformers' GPT-2 and Llama becomes the same spec", "[train][hf]") {
  const auto g = model::spec_from_hf_config(fixture_text("tiny-gpt2/config.json"), "tiny-gpt2");
  CHECK(g.arch == config::ModelArch::kGpt2);
  CHECK(g.n_layer == 2);
  CHECK(g.n_head == 4);
  CHECK(g.d_model == 24);
  CHECK(g.d_ff == 96);  // n_inner null: 4 x n_embd
  CHECK(g.max_seq_len == 32);
  CHECK(g.vocab_size == 67);
  CHECK(g.tie_embeddings);
  const auto l = model::spec_from_hf_config(fixture_text("tiny-llama/config.json"), "tiny-llama");
  CHECK(l.arch == config::ModelArch::kLlama);
  CHECK(l.n_kv_head == 2);
  CHECK(l.d_ff == 56);
  CHECK(l.max_seq_len == 64);
  CHECK(l.rope_theta == 500000.0);  // from rope_parameters (transformers 5)
  CHECK_FALSE(l.tie_embeddings);
  CHECK_THAT(model::shape_overrides(l), Contains("model.arch=llama model.n_layer=2 model.n_head=4 model.n_kv_head=2"));
}

TEST_CASE("unsupported architectures and options are refused by name", "[train][hf]") {
  auto err = [](const std::string& json) {
    try {
      model::spec_from_hf_config(json, "x/config.json");
    } catch (const util::CheckpointError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(err(R"({"architectures": ["BertModel"]})"), Contains("`BertModel` is not supported"));
  const std::string llama =
      R"({"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 2, "num_attention_heads": 4, "hidden_size": 32,
          "intermediate_size": 64, "max_position_embeddings": 64, "vocab_size": 100)";
  CHECK(err(llama + "}") == "no error");
  CHECK_THAT(err(llama + R"(, "rope_scaling": {"type": "longrope", "factor": 2}})"),
             Contains("rope_scaling.short_factor is missing"));
  CHECK_THAT(err(llama + R"(, "rope_scaling": {"type": "su2", "factor": 2}})"), Contains("RoPE scaling type `su2`"));
  CHECK_THAT(err(llama + R"(, "hidden_act": "gelu"})"), Contains("hidden_act"));
  const std::string mistral =
      R"({"architectures": ["MistralForCausalLM"], "num_hidden_layers": 2, "num_attention_heads": 4,
          "hidden_size": 32, "intermediate_size": 64, "max_position_embeddings": 64, "vocab_size": 100)";
  CHECK(err(mistral + R"(, "sliding_window": 16})") == "no error");  // every layer slides
  const std::string qwen2 = R"({"architectures": ["Qwen2ForCausalLM"], "num_hidden_layers": 2, "num_attention_heads": 4,
          "hidden_size": 32, "intermediate_size": 64, "max_position_embeddings": 64, "vocab_size": 100)";
  CHECK_THAT(err(qwen2 + R"(, "use_sliding_window": true, "sliding_window": 16, "max_window_layers": 1})"),
             Contains("layer_types"));
  CHECK_THAT(err(R"({"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 2})"),
             Contains("num_attention_heads"));
  CHECK_THAT(err("[1, 2]"), Contains("not a JSON object"));
}

TEST_CASE("model.from a Hugging Face directory of another shape names the overrides to use", "[train][hf]") {
  test::TempDir d;
  const auto docs = d.write("docs.txt", "some text for a tiny run\n");
  auto cfg = test::resolve("{}", {"data.train=" + docs.string(), "data.validation_fraction=0", "trainer.max_steps=1",
                                  "data.seq_len=8", "data.cache=false",
                                  "model.from=" + std::string(HFTRAIN_TEST_FIXTURES_DIR) + "/tiny-llama",
                                  "run.output_dir=" + (d.path() / "run").string()})
                 .values;
  try {
    train::Trainer t(cfg, cfg.run.output_dir);
    FAIL("expected a ConfigError");
  } catch (const util::ConfigError& e) {
    CHECK_THAT(std::string(e.what()), Contains("different shape"));
    CHECK_THAT(e.hint(),
               Contains("model.arch=llama model.n_layer=2 model.n_head=4 model.n_kv_head=2 model.d_model=32"));
  }
}

TEST_CASE("model.from a classifier's run directory reads its final/ (Hugging Face layout)", "[train][hf]") {
  test::TempDir d;
  model::BertSpec spec;
  spec.vocab_size = 40;
  spec.hidden_size = 8;
  spec.num_hidden_layers = 1;
  spec.num_attention_heads = 2;
  spec.intermediate_size = 16;
  spec.max_position_embeddings = 32;
  spec.num_labels = 3;
  model::BertEncoder bert(spec);
  for (const char* dir : {"run/final", "run/checkpoint-4"}) {
    std::filesystem::create_directories(d.path() / dir);
    model::write_hf_bert(bert, d.path() / dir, {"bad", "good", "neutral"}, model::kDefaultHfShardBytes);
  }
  const train::ModelSource source = train::read_model_source(d.path() / "run");
  CHECK(source.dir == d.path() / "run" / "final");
  CHECK(source.hugging_face);
  REQUIRE(source.bert);
  CHECK(source.bert->num_labels == 3);
  CHECK(source.id2label == std::vector<std::string>{"bad", "good", "neutral"});
  CHECK(source.spec_file == d.path() / "run" / "final" / "config.json");
  // Without final/, the newest checkpoint.
  std::filesystem::remove_all(d.path() / "run" / "final");
  CHECK(train::read_model_source(d.path() / "run").dir == d.path() / "run" / "checkpoint-4");
  // A directory that is neither names what it lacks.
  std::filesystem::create_directories(d.path() / "empty");
  CHECK_THROWS_WITH(train::read_model_source(d.path() / "empty"),
                    Contains("holds no model.json, final/ or checkpoint-N/"));
}

TEST_CASE("model.from a RoBERTa directory sets model.encoder and the usable positions and so does a fresh one",
          "[train][hf]") {
  test::TempDir d;
  model::BertSpec spec;
  spec.family = config::Encoder::kRoberta;
  spec.vocab_size = 40;
  spec.hidden_size = 8;
  spec.num_hidden_layers = 1;
  spec.num_attention_heads = 2;
  spec.intermediate_size = 16;
  spec.max_position_embeddings = 34;  // 32 tokens after the padding id 1
  spec.pad_token_id = 1;
  spec.type_vocab_size = 1;
  model::BertEncoder roberta(spec);
  std::filesystem::create_directories(d.path() / "roberta");
  model::write_hf_bert(roberta, d.path() / "roberta", {}, model::kDefaultHfShardBytes);
  const auto recipe = d.write("recipe.yaml", "trainer:\n  max_steps: 10\n");
  config::ResolveOptions options;
  options.recipe = recipe;
  const util::MapEnvironment env;
  options.env = &env;
  options.overrides = {"model.from=" + (d.path() / "roberta").string(), "data.train=[a.csv]"};
  const auto cfg = train::resolve_with_model_from(options, config::product_schema()).values;
  CHECK(cfg.model.arch == config::ModelArch::kBert);
  CHECK(cfg.model.encoder == config::Encoder::kRoberta);
  CHECK(cfg.model.max_seq_len == 32);
  // The same shape from scratch: the table holds the padding id's rows too.
  const auto fresh = train::bert_spec(cfg, std::nullopt, 1);
  CHECK((fresh.roberta() && fresh.max_position_embeddings == 34 && fresh.max_tokens() == 32));
  CHECK_FALSE(fresh.has_pooler());  // with its classifier: RobertaForSequenceClassification
}
