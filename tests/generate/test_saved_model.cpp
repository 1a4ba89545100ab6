// Model directories: save/load round trips give identical logits and tokenizers, saving replaces
// an existing directory whole, run directories resolve to their newest model, and every damaged or
// mismatched directory is a CheckpointError naming the file.
#include "../torch_catch.h"

#include <fstream>
#include <functional>

#include <ATen/CPUGeneratorImpl.h>

#include "../config/helpers.h"
#include "tokenizer/byte_tokenizer.h"
#include "tokenizer/tokenizer_json.h"
#include "helpers.h"
#include "model/weights/saved_model.h"
#include "util/error.h"

using namespace hftrain;
namespace fs = std::filesystem;

namespace {

torch::Tensor logits_of(model::Transformer m) {  // a holder: shares the module
  torch::NoGradGuard no_grad;
  m->eval();
  return m->forward(torch::tensor({{1, 2, 3, 4, 5, 6, 7}}, torch::kInt64));
}

std::string checkpoint_error(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const util::CheckpointError& e) {
    return std::string(e.what()) + " | hint: " + e.hint();
  }
  FAIL("expected a CheckpointError");
  return {};
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A saved random model; returns it for comparison.
model::Transformer save_random(const fs::path& dir, const model::ModelSpec& spec,
                               uint64_t seed = 1) {
  torch::manual_seed(seed);
  model::Transformer m(spec);
  model::save_model_dir(dir, m, tokenizer::TokenizerKind::kByte, nullptr);
  return m;
}

}  // namespace

TEST_CASE("a byte-tokenizer GPT-2 model directory round-trips with identical logits",
          "[generate]") {
  test::TempDir tmp;
  const fs::path dir = tmp.path() / "final";
  auto m = save_random(dir, test::tiny_gpt2_spec());
  CHECK(fs::exists(dir / "model.safetensors"));
  CHECK(read(dir / "tokenizer.json").find("\"hftrain_tokenizer\": \"byte\"") != std::string::npos);
  CHECK(model::ModelSpec::from_json(read(dir / "model.json"), "model.json").vocab_size == 258);

  auto loaded = model::load_model_dir(dir);
  CHECK(loaded.dir == dir);
  CHECK(loaded.tokenizer_kind == tokenizer::TokenizerKind::kByte);
  CHECK(loaded.tokenizer->fingerprint() == tokenizer::ByteTokenizer().fingerprint());
  CHECK(torch::equal(logits_of(loaded.model), logits_of(m)));
  // No temporary directory is left next to it.
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(tmp.path())) ++entries;
  CHECK(entries == 1);
}

TEST_CASE("a BPE Llama model directory round-trips the Hugging Face tokenizer.json", "[generate]") {
  test::TempDir tmp;
  auto bpe = test::fortune_bpe(300);
  torch::manual_seed(4);
  model::Transformer m(test::tiny_llama_spec(304));
  model::save_model_dir(tmp.path(), m, tokenizer::TokenizerKind::kBpe, bpe.get());
  CHECK(read(tmp.path() / "tokenizer.json") == tokenizer::tokenizer_json_text(*bpe));
  auto loaded = model::load_model_dir(tmp.path());
  CHECK(loaded.tokenizer_kind == tokenizer::TokenizerKind::kBpe);
  CHECK(loaded.tokenizer->fingerprint() == bpe->fingerprint());
  CHECK(loaded.tokenizer->encode("the quick brown fox") == bpe->encode("the quick brown fox"));
  CHECK(torch::equal(logits_of(loaded.model), logits_of(m)));
}

TEST_CASE("saving over a model directory replaces it whole", "[generate]") {
  test::TempDir tmp;
  const fs::path dir = tmp.path() / "final";
  save_random(dir, test::tiny_gpt2_spec(), 1);
  std::ofstream(dir / "stale.txt") << "from the old directory";
  auto newer = save_random(dir, test::tiny_llama_spec(258), 2);
  CHECK_FALSE(fs::exists(dir / "stale.txt"));
  auto loaded = model::load_model_dir(dir);
  CHECK(loaded.model->spec().arch == config::ModelArch::kLlama);
  CHECK(torch::equal(logits_of(loaded.model), logits_of(newer)));
  for (const auto& e : fs::directory_iterator(tmp.path())) CHECK(e.path().filename() == "final");
}

TEST_CASE("write_model_files adds a model to a folder the caller stages", "[generate]") {
  test::TempDir tmp;
  const fs::path staged = tmp.path() / "checkpoint-5.staging";
  fs::create_directories(staged);
  tmp.write("checkpoint-5.staging/optimizer.bin", "state");
  torch::manual_seed(9);
  model::Transformer m(test::tiny_llama_spec(258));
  model::write_model_files(staged, m, tokenizer::TokenizerKind::kByte, nullptr);
  CHECK(read(staged / "optimizer.bin") == "state");
  CHECK(torch::equal(logits_of(model::load_model_dir(staged).model), logits_of(m)));
}

TEST_CASE("saving refuses tokenizers that do not fit the model", "[generate]") {
  test::TempDir tmp;
  torch::manual_seed(1);
  model::Transformer small(test::tiny_gpt2_spec(258));
  auto bpe = test::fortune_bpe(300);
  CHECK_THROWS_AS(
      model::save_model_dir(tmp.path() / "a", small, tokenizer::TokenizerKind::kBpe, bpe.get()),
      util::ConfigError);
  CHECK_THROWS_AS(
      model::save_model_dir(tmp.path() / "b", small, tokenizer::TokenizerKind::kBpe, nullptr),
      util::UsageError);
  tokenizer::ByteTokenizer byte;
  CHECK_THROWS_AS(model::save_model_dir(tmp.path() / "c", small, tokenizer::TokenizerKind::kBpe, &byte),
                  util::UsageError);
  CHECK_FALSE(fs::exists(tmp.path() / "a"));
  CHECK_FALSE(fs::exists(tmp.path() / "b"));
}

TEST_CASE("a run directory resolves to final/, else the highest-numbered checkpoint",
          "[generate]") {
  test::TempDir tmp;
  const fs::path run = tmp.path() / "run";
  for (const char* name : {"checkpoint-2", "checkpoint-9", "checkpoint-10"})
    fs::create_directories(run / name);
  fs::create_directories(run / "checkpoint-11.tmp-123");  // an interrupted save
  fs::create_directories(run / "checkpoint-x");
  tmp.write("run/checkpoint-99", "a file, not a folder");
  CHECK(model::resolve_model_dir(run) == run / "checkpoint-10");
  // The chosen checkpoint is empty here: the error names the file it lacks.
  CHECK_THAT(
      checkpoint_error([&] { model::load_model_dir(run); }),
      Catch::Contains("checkpoint-10/model.json is missing") && Catch::Contains("incomplete"));
  fs::create_directories(run / "final");
  CHECK(model::resolve_model_dir(run) == run / "final");
  // A model directory is itself.
  save_random(run / "final", test::tiny_gpt2_spec());
  CHECK(model::resolve_model_dir(run / "final") == run / "final");
  CHECK(model::load_model_dir(run).dir == run / "final");

  CHECK_THAT(checkpoint_error([&] { model::resolve_model_dir(tmp.path() / "nope"); }),
             Catch::Contains("nope does not exist") && Catch::Contains("run directory"));
  CHECK_THAT(checkpoint_error([&] { model::resolve_model_dir(run / "checkpoint-99"); }),
             Catch::Contains("is not a directory"));
  CHECK_THAT(checkpoint_error([&] { model::resolve_model_dir(run / "checkpoint-x"); }),
             Catch::Contains("holds no model.json, final/ or checkpoint-N/"));
}

TEST_CASE("damaged or mismatched model directories are checkpoint errors naming the file",
          "[generate]") {
  test::TempDir tmp;
  const fs::path dir = tmp.path() / "m";
  auto fresh = [&] {
    fs::remove_all(dir);
    save_random(dir, test::tiny_gpt2_spec());
  };

  fresh();
  fs::remove(dir / "model.safetensors");
  CHECK_THAT(checkpoint_error([&] { model::load_model_dir(dir); }),
             Catch::Contains("model.safetensors is missing"));

  fresh();
  fs::remove(dir / "tokenizer.json");
  CHECK_THAT(checkpoint_error([&] { model::load_model_dir(dir); }),
             Catch::Contains("tokenizer.json is missing"));

  fresh();
  const std::string weights = read(dir / "model.safetensors");
  tmp.write("m/model.safetensors", weights.substr(0, weights.size() / 2));
  CHECK_THAT(checkpoint_error([&] { model::load_model_dir(dir); }),
             Catch::Contains("model.safetensors"));
  tmp.write("m/model.safetensors", "garbage");
  CHECK_THAT(checkpoint_error([&] { model::load_model_dir(dir); }),
             Catch::Contains("model.safetensors"));

  fresh();
  tmp.write("m/model.json", "{\"format\": \"hftrain-model\", \"arch\": ");
  CHECK_THAT(checkpoint_error([&] { model::load_model_dir(dir); }), Catch::Contains("model.json"));

  // Weights of another shape: every mismatch is listed.
  fresh();
  auto other = test::tiny_gpt2_spec();
  other.d_model = 32;
  tmp.write("m/model.json", other.to_json());
  CHECK_THAT(checkpoint_error([&] { model::load_model_dir(dir); }),
             Catch::Contains("does not match model.json") &&
                 Catch::Contains("embed_tokens.weight") && Catch::Contains("expected [258, 32]"));
  // A tensor the model does not have.
  other = test::tiny_gpt2_spec();
  other.n_layer = 1;
  tmp.write("m/model.json", other.to_json());
  CHECK_THAT(checkpoint_error([&] { model::load_model_dir(dir); }),
             Catch::Contains("unexpected layers.1."));

  // A tokenizer with more tokens than the model's vocabulary.
  fresh();
  tokenizer::save_tokenizer_json(*test::fortune_bpe(300), dir / "tokenizer.json");
  CHECK_THAT(checkpoint_error([&] { model::load_model_dir(dir); }),
             Catch::Contains("tokenizer.json has 300 tokens, more than the vocab_size 258"));

  // An unknown hftrain tokenizer marker is a data error naming the file.
  fresh();
  tmp.write("m/tokenizer.json", "{\"hftrain_tokenizer\": \"wordpiece\"}");
  CHECK_THROWS_WITH(model::load_model_dir(dir),
                    Catch::Contains("tokenizer.json: unknown hftrain_tokenizer"));
}

TEST_CASE("loading a model does not move torch's global random stream", "[generate]") {
  test::TempDir tmp;
  save_random(tmp.path(), test::tiny_gpt2_spec());
  torch::manual_seed(77);
  const auto want = torch::rand({4});
  torch::manual_seed(77);
  model::load_model_dir(tmp.path());
  CHECK(torch::equal(torch::rand({4}), want));
}

TEST_CASE("load_tokenizer_file reads both the byte marker and Hugging Face files", "[generate]") {
  test::TempDir tmp;
  tokenizer::TokenizerKind kind{};
  auto byte = model::load_tokenizer_file(
      tmp.write(
          "byte.json",
          R"({"hftrain_tokenizer": "byte", "special_tokens": ["<|endoftext|>", "<|pad|>", "<|x|>"]})"),
      &kind);
  CHECK(kind == tokenizer::TokenizerKind::kByte);
  CHECK(byte->vocab_size() == 259);
  CHECK(byte->special_id("<|x|>") == 258);
  auto bpe = model::load_tokenizer_file(
      fs::path(HFTRAIN_TEST_FIXTURES_DIR) / "data/hf_bpe_tokenizer.json", &kind);
  CHECK(kind == tokenizer::TokenizerKind::kBpe);
  CHECK_THROWS_AS(model::load_tokenizer_file(tmp.write(
                      "bad.json", R"({"hftrain_tokenizer": "byte", "special_tokens": [1]})")),
                  util::DataError);
  CHECK_THROWS_AS(model::load_tokenizer_file(tmp.write(
                      "nospecial.json", R"({"hftrain_tokenizer": "byte", "special_tokens": []})")),
                  util::DataError);
  CHECK_THROWS_AS(model::load_tokenizer_file(tmp.path() / "missing.json"), util::DataError);
}
