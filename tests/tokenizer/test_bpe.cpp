// Byte-level BPE: the GPT-2 pre-tokenizer split, training, round trips on multilingual text,
// tokenizer.json save/load, and ids identical to the Python `tokenizers` library (fixtures from
// tests/conformance/tokenizer_gen_bpe_fixtures.py).
#include <catch2/catch.hpp>

#include <fstream>
#include <nlohmann/json.hpp>

#include "data/tokenizer_training.h"
#include "tokenizer/bpe_trainer.h"
#include "tokenizer/byte_tokenizer.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/tokenizer_json.h"
#include "tokenizer/unicode.h"
#include "helpers.h"
#include "util/fs.h"

using namespace hftrain;
using Json = nlohmann::json;

namespace {

const std::string kFixtures = std::string(HFTRAIN_TEST_FIXTURES_DIR) + "/data";

std::vector<std::string> split(std::string_view text) {
  std::vector<std::string> out;
  for (auto piece : tokenizer::gpt2_split(text)) out.emplace_back(piece);
  return out;
}

tokenizer::BpeTokenizer trained(int32_t vocab_size) {
  tokenizer::BpeTrainer trainer({.vocab_size = vocab_size, .min_frequency = 2});
  for (int i = 0; i < 3; ++i) {
    for (const auto& text : test::kMultilingual) trainer.add_text(text);
  }
  data::add_sources(trainer,
                    {data::SourceSpec{.path = kFixtures + "/fortunes/*", .exclude = {"*.dat"}, .separator = "%"}});
  return trainer.train();
}

Json fixture(const std::string& name) {
  return Json::parse(util::read_file<util::DataError>(kFixtures + "/" + name, "fixture"));
}

}  // namespace

TEST_CASE("GPT-2 pre-tokenizer splits like the regex", "[data][bpe]") {
  using V = std::vector<std::string>;
  CHECK(split("Hello world") == V{"Hello", " world"});
  // "\s+(?!\S)" gives back the last newline, which then stands alone ("\s+").
  CHECK(split("it's  ok!!\n\nyes") == V{"it", "'s", " ", " ok", "!!", "\n", "\n", "yes"});
  CHECK(split("ok\n\n") == V{"ok", "\n\n"});
  CHECK(split("a   b") == V{"a", "  ", " b"});
  CHECK(split("x 123 4.5") == V{"x", " 123", " 4", ".", "5"});
  CHECK(split("end   ") == V{"end", "   "});
  CHECK(split("\tcafé") == V{"\t", "café"});
  CHECK(split(" 日本語") == V{" 日本語"});
  CHECK(split("we'll they've I'm") == V{"we", "'ll", " they", "'ve", " I", "'m"});
}

TEST_CASE("GPT-2 pre-tokenizer matches tokenizers' ByteLevel on the fixture texts", "[data][bpe]") {
  auto fx = fixture("hf_bpe_expected.json");
  const auto& texts = fx.at("pretokenized_texts");
  const auto& pieces = fx.at("pretokenized");
  REQUIRE(texts.size() == pieces.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    std::vector<std::string> expected;
    for (const auto& p : pieces[i]) expected.push_back(*tokenizer::unicode::byte_level_decode(p.get<std::string>()));
    INFO(texts[i].get<std::string>());
    CHECK(split(texts[i].get<std::string>()) == expected);
  }
}

TEST_CASE("byte-level char map is GPT-2's bytes_to_unicode", "[data][bpe]") {
  CHECK(tokenizer::unicode::byte_to_char(' ') == 0x120);  // "Ġ"
  CHECK(tokenizer::unicode::byte_to_char('\n') == 0x10A);  // "Ċ"
  CHECK(tokenizer::unicode::byte_to_char('A') == 'A');
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  CHECK(*tokenizer::unicode::byte_level_decode(tokenizer::unicode::byte_level_encode(all)) == all);
}

TEST_CASE("trained BPE: round trips multilingual text and compresses it", "[data][bpe]") {
  auto tok = trained(600);
  CHECK(tok.vocab_size() <= 600);
  CHECK(tok.vocab_size() > 400);
  CHECK(tok.eot_id() == tok.vocab_size() - 2);
  CHECK(tok.pad_id() == tok.vocab_size() - 1);
  size_t bytes = 0;
  size_t ids = 0;
  for (const auto& text : test::kMultilingual) {
    auto encoded = tok.encode(text);
    CHECK(tok.decode(encoded) == text);
    bytes += text.size();
    ids += encoded.size();
  }
  CHECK(ids * 2 < bytes);  // trained on these texts: well under half a token per byte
  CHECK(tok.encode("x<|endoftext|>", true).back() == tok.eot_id());
  CHECK(tok.encode("x<|endoftext|>", false).back() != tok.eot_id());
  std::string unseen = "Zürich → Ωmega ✓ 🚀🚀";
  CHECK(tok.decode(tok.encode(unseen)) == unseen);
}

TEST_CASE("trained BPE: training is deterministic", "[data][bpe]") {
  CHECK(trained(500).fingerprint() == trained(500).fingerprint());
  CHECK(trained(500).fingerprint() != trained(520).fingerprint());
}

TEST_CASE("tokenizer.json: save and load give the same ids", "[data][bpe]") {
  test::TempDir dir;
  auto tok = trained(600);
  auto path = dir.path() / "tokenizer.json";
  tokenizer::save_tokenizer_json(tok, path);
  auto loaded = tokenizer::load_tokenizer_json(path);
  CHECK(loaded->fingerprint() == tok.fingerprint());
  for (const auto& text : test::kMultilingual) CHECK(loaded->encode(text) == tok.encode(text));
  auto via_factory = tokenizer::make_tokenizer({tokenizer::TokenizerKind::kBpe, path.string(), "", ""});
  CHECK(via_factory->vocab_size() == tok.vocab_size());
}

TEST_CASE("tokenizer.json from the tokenizers library: identical ids and decoding", "[data][bpe]") {
  auto tok = tokenizer::load_tokenizer_json(kFixtures + "/hf_bpe_tokenizer.json");
  auto fx = fixture("hf_bpe_expected.json");
  const auto& texts = fx.at("texts");
  const auto& ids = fx.at("ids");
  REQUIRE(texts.size() == ids.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    const auto text = texts[i].get<std::string>();
    INFO(text);
    auto expected = ids[i].get<std::vector<int32_t>>();
    CHECK(tok->encode(text, true) == expected);
    CHECK(tok->decode(expected) == text);
  }
  CHECK(tok->eot_id() == fx.at("eot_id").get<int32_t>());
}

TEST_CASE("tokenizer.json: damaged or unsupported files are DataErrors naming the file", "[data][bpe]") {
  test::TempDir dir;
  auto bad = dir.write("bad.json", "{\"model\": ");
  CHECK_THAT(test::data_error([&] { tokenizer::load_tokenizer_json(bad); }),
             Catch::Contains("bad.json: malformed JSON"));
  auto unigram = dir.write(
      "u.json",
      R"({"normalizer": null, "pre_tokenizer": {"type": "ByteLevel"}, )"
      R"("model": {"type": "Unigram", "vocab": [], "unk_id": 0}})");
  CHECK_THAT(test::data_error([&] { tokenizer::load_tokenizer_json(unigram); }),
             Catch::Contains("u.json: model.unk_id is 0"));
  auto normalized = dir.write("n.json", R"({"normalizer": {"type": "Precompiled"}, "model": {"type": "BPE"}})");
  CHECK_THAT(test::data_error([&] { tokenizer::load_tokenizer_json(normalized); }),
             Catch::Contains("n.json: normalizer.precompiled_charsmap is missing"));
  auto no_eot = dir.write("e.json",
                          R"({"normalizer": null, "pre_tokenizer": {"type": "ByteLevel"}, "added_tokens": [],
                              "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": [["a", "b"]]}})");
  CHECK_THAT(test::data_error([&] { tokenizer::load_tokenizer_json(no_eot); }), Catch::Contains("<|endoftext|>"));
  auto wrong = dir.write(
      "w.json",
      R"({"normalizer": null, "pre_tokenizer": {"type": "ByteLevel"}, )"
      R"("model": {"type": "BPE", "vocab": [1], "merges": []}})");
  CHECK_THAT(test::data_error([&] { tokenizer::load_tokenizer_json(wrong); }), Catch::Contains("w.json"));
}

TEST_CASE("the byte tokenizer exports as a merge-free BPE with the same ids", "[data][bpe]") {
  tokenizer::ByteTokenizer byte;
  tokenizer::BpeTokenizer bpe(tokenizer::byte_tokenizer_model(byte));
  for (const auto& text : test::kMultilingual) CHECK(bpe.encode(text) == byte.encode(text));
  CHECK(bpe.eot_id() == byte.eot_id());
  CHECK(bpe.pad_id() == byte.pad_id());
}
