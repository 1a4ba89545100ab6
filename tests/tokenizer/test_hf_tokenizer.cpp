// Whole tokenizer.json files through HfTokenizer: a Llama-2-style and a BERT-style tokenizer that
// the `tokenizers` library trained (fixtures from tests/conformance/tokenizer_gen_hf_fixtures.py), and
// a T5-style and a byte-fallback Unigram tokenizer with SentencePiece charsmaps (fixtures from
// tokenizer_gen_unigram_fixtures.py) give its normalized text, ids and decodings; which token ends
// documents and pads; errors that name the JSON path; and what a loaded tokenizer writes back.
#include <catch2/catch.hpp>

#include <fstream>
#include <nlohmann/json.hpp>

#include "tokenizer/hf/hf_tokenizer.h"
#include "tokenizer/tokenizer_json.h"
#include "helpers.h"
#include "util/fs.h"

using namespace hftrain;
using Json = nlohmann::json;
using Ids = std::vector<int32_t>;

namespace {

const std::string kFixtures = std::string(HFTRAIN_TEST_FIXTURES_DIR) + "/data";

Json fixture(const std::string& name) {
  return Json::parse(util::read_file<util::DataError>(kFixtures + "/" + name, "fixture"));
}

// Compares hf_<name>_tokenizer.json with what `expected` holds for `name`; returns how many
// texts `tokenizers` decodes back to themselves (hftrain must then too).
size_t check_against_fixture(const std::string& name,
                             const std::string& expected = "hf_pipeline_expected.json") {
  auto tok = tokenizer::load_tokenizer_json(kFixtures + "/hf_" + name + "_tokenizer.json");
  const auto* hf = dynamic_cast<const tokenizer::HfTokenizer*>(tok.get());
  REQUIRE(hf);
  const Json fx = fixture(expected);
  const Json& texts = fx.at("texts");
  const Json& want = fx.at(name);
  REQUIRE(texts.size() == want.size());
  size_t round_trips = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    const auto text = texts[i].get<std::string>();
    INFO(name << ": " << text);
    const Json& w = want[i];
    if (w.contains("normalized"))
      CHECK(hf->normalized(text) == w.at("normalized").get<std::string>());
    const auto ids = tok->encode(text, true);
    CHECK(ids == w.at("ids").get<Ids>());
    CHECK(tok->encode(text, false) == w.at("plain").get<Ids>());
    CHECK(tok->encode_with_special_tokens(text) == w.at("with_special").get<Ids>());
    CHECK(tok->decode(w.at("ids").get<Ids>()) == w.at("decoded").get<std::string>());
    CHECK(tok->decode_without_special(w.at("with_special").get<Ids>()) ==
          w.at("decoded_skip").get<std::string>());
    if (w.at("decoded").get<std::string>() == text) {
      CHECK(tok->decode(ids) == text);
      ++round_trips;
    }
  }
  return round_trips;
}

// A small tokenizer.json around a WordLevel model; `extra` adds or replaces top-level keys.
std::string word_level(const std::string& extra = "") {
  return R"({"version": "1.0", "truncation": null, "padding": null,
    "added_tokens": [{"id": 0, "content": "<unk>", "single_word": false, "lstrip": false, "rstrip": false,
                      "normalized": false, "special": true},
                     {"id": 1, "content": "</s>", "single_word": false, "lstrip": false, "rstrip": false,
                      "normalized": false, "special": true}],
    "normalizer": {"type": "Lowercase"}, "pre_tokenizer": {"type": "WhitespaceSplit"},
    "post_processor": null, "decoder": null,
    "model": {"type": "WordLevel", "vocab": {"<unk>": 0, "</s>": 1, "hello": 2, "world": 3, "<pad>": 4},
              "unk_token": "<unk>"})" +
         extra + "}";
}

}  // namespace

TEST_CASE("a Llama-2-style tokenizer.json gives the tokenizers library's ids and text",
          "[data][hf]") {
  check_against_fixture("llama2");
  auto tok = tokenizer::load_tokenizer_json(kFixtures + "/hf_llama2_tokenizer.json");
  CHECK(tok->eot_id() == 2);  // </s>
  CHECK(tok->pad_id() == 2);  // no padding token: the end-of-text token
  for (const auto& text : test::kMultilingual)
    CHECK(tok->decode(tok->encode(text)) == text);            // lossless
  CHECK(tok->encode_with_special_tokens("hi").front() == 1);  // <s>
}

TEST_CASE("a BERT-style tokenizer.json gives the tokenizers library's ids and text", "[data][hf]") {
  check_against_fixture("bert");
  auto tok = tokenizer::load_tokenizer_json(kFixtures + "/hf_bert_tokenizer.json");
  CHECK(tok->eot_id() == *tok->special_id("[SEP]"));  // from the post-processor, [CLS] $A [SEP]
  CHECK(tok->pad_id() == *tok->special_id("[PAD]"));
  CHECK_FALSE(tok->special_id("[NOPE]"));
}

TEST_CASE("a T5-style Unigram tokenizer.json gives the tokenizers library's ids and text",
          "[data][hf]") {
  CHECK(check_against_fixture("t5", "hf_unigram_expected.json") > 0);
  auto tok = tokenizer::load_tokenizer_json(kFixtures + "/hf_t5_tokenizer.json");
  CHECK(dynamic_cast<const tokenizer::HfTokenizer&>(*tok).model_kind() == "Unigram");
  CHECK(tok->eot_id() == 1);  // </s>, which the post-processor appends
  CHECK(tok->pad_id() == 0);  // <pad>
  CHECK(tok->encode_with_special_tokens("hi").back() == 1);
  CHECK(tok->special_id("<extra_id_0>"));
}

TEST_CASE("a byte-fallback Unigram tokenizer.json gives the tokenizers library's ids and text",
          "[data][hf]") {
  CHECK(check_against_fixture("unigram_bytes", "hf_unigram_expected.json") > 0);
  auto tok = tokenizer::load_tokenizer_json(kFixtures + "/hf_unigram_bytes_tokenizer.json");
  CHECK(tok->eot_id() == *tok->special_id("[SEP]"));
  // Characters outside the pieces come back through their <0xXX> pieces.
  for (const char* text : {"snowman \u2603 and \U0001d54f", "\u4e00\u9fa5 \u0d9a\u0dd2"})
    CHECK(tok->decode(tok->encode(text)) == text);
}

TEST_CASE("the end-of-text token: explicit choice, tokenizer_config.json, well-known names",
          "[data][hf]") {
  test::TempDir dir;
  const auto path = dir.write("tokenizer.json", word_level());
  auto tok = tokenizer::load_tokenizer_json(path);
  CHECK(tok->eot_id() == 1);  // </s>
  CHECK(tok->pad_id() == 1);

  tokenizer::SpecialTokenChoice choice;
  choice.eos_token = "world";
  choice.pad_token = "<pad>";
  auto chosen = tokenizer::load_tokenizer_json(path, choice);
  CHECK(chosen->eot_id() == 3);
  CHECK(chosen->pad_id() == 4);
  CHECK(chosen->fingerprint() != tok->fingerprint());  // the token cache must not mix them up

  dir.write("tokenizer_config.json",
            R"({"eos_token": {"content": "hello", "__type": "AddedToken"}, "pad_token": "<pad>"})");
  auto configured = tokenizer::load_tokenizer_json(path);
  CHECK(configured->eot_id() == 2);
  CHECK(configured->pad_id() == 4);
  choice.eos_token = "</s>";
  CHECK(tokenizer::load_tokenizer_json(path, choice)->eot_id() == 1);  // an explicit choice wins

  dir.write("tokenizer_config.json", R"({"eos_token": "<|nope|>"})");
  CHECK_THAT(test::data_error([&] { tokenizer::load_tokenizer_json(path); }),
             Catch::Contains("tokenizer_config.json names the end-of-text token '<|nope|>'"));
  dir.write("tokenizer_config.json", "{not json");
  CHECK_THAT(test::data_error([&] { tokenizer::load_tokenizer_json(path); }),
             Catch::Contains("tokenizer_config.json is not valid JSON"));
}

TEST_CASE("the make_tokenizer options choose the end-of-text token", "[data][hf]") {
  test::TempDir dir;
  const auto path = dir.write("tokenizer.json", word_level());
  auto tok = tokenizer::make_tokenizer({tokenizer::TokenizerKind::kBpe, path.string(), "hello", ""});
  CHECK(tok->eot_id() == 2);
  CHECK_THAT(test::data_error([&] {
               tokenizer::make_tokenizer({tokenizer::TokenizerKind::kBpe, path.string(), "<eos>", ""});
             }),
             Catch::Contains("the chosen end-of-text token '<eos>' is not in its vocabulary"));
}

TEST_CASE("a tokenizer without a recognisable end-of-text token is refused with a way out",
          "[data][hf]") {
  test::TempDir dir;
  auto doc = Json::parse(word_level());
  doc["added_tokens"].erase(1);  // </s> stays in the vocabulary, but not as a special token
  const auto path = dir.write("tokenizer.json", doc.dump());
  CHECK_THAT(test::data_error([&] { tokenizer::load_tokenizer_json(path); }),
             Catch::Contains("has no end-of-text token hftrain recognises"));
  dir.write("tokenizer_config.json", R"({"eos_token": "</s>"})");
  CHECK(tokenizer::load_tokenizer_json(path)->eot_id() == 1);
}

TEST_CASE("WordLevel pipeline: normalizer, pre-tokenizer, no decoder joins with spaces",
          "[data][hf]") {
  auto tok = tokenizer::parse_tokenizer_json(word_level(), "w.json");
  CHECK(tok->encode("Hello  WORLD there</s>", true) == Ids{2, 3, 0, 1});
  CHECK(tok->encode("Hello  WORLD there</s>", false) ==
        Ids{2, 3, 0});  // "there</s>" is one unknown word
  CHECK(tok->decode(Ids{2, 3, 1}) == "hello world </s>");
  CHECK(tok->decode_without_special(Ids{2, 3, 1}) == "hello world");
  CHECK(tok->vocab_size() == 5);
  CHECK_THAT(test::data_error([&] { tok->decode(Ids{5}); }),
             Catch::Contains("outside the tokenizer's vocabulary"));
  CHECK(tok->encode("bad \xff byte", true) ==
        Ids{0, 0, 0});  // invalid UTF-8 becomes U+FFFD, an unknown word
}

TEST_CASE("tokenizer.json errors name the file and the JSON path", "[data][hf]") {
  auto error = [](const std::string& text) {
    return test::data_error([&] { tokenizer::parse_tokenizer_json(text, "e.json"); });
  };
  CHECK_THAT(error(word_level(R"(, "normalizer": {"type": "Precompiled"})")),
             Catch::Contains("e.json: normalizer.precompiled_charsmap is missing"));
  CHECK_THAT(error(word_level(R"(, "decoder": {"type": "CTC"})")),
             Catch::Contains("e.json: decoder.type is 'CTC'"));
  CHECK_THAT(error(word_level(R"(, "added_tokens": [{"id": 0}])")),
             Catch::Contains("e.json: added_tokens[0].content is missing"));
  CHECK_THAT(
      error(word_level(
          R"(, "post_processor": {"type": "BertProcessing", "sep": ["[SEP]"], "cls": ["[CLS]", 1]})")),
      Catch::Contains("post_processor.sep is not [token, id]"));
  CHECK_THAT(error(R"({"model": 3})"),
             Catch::Contains("e.json: model is missing or not an object"));
  CHECK_THAT(error("[1, 2]"), Catch::Contains("e.json has no \"model\""));
  CHECK_THAT(error("{\"model\": "), Catch::Contains("e.json: malformed JSON"));
}

TEST_CASE("a loaded tokenizer.json is written back as it was read", "[data][hf]") {
  test::TempDir dir;
  const auto text =
      util::read_file<util::DataError>(kFixtures + "/hf_bert_tokenizer.json", "fixture");
  auto tok = tokenizer::parse_tokenizer_json(text, "bert.json");
  CHECK(tokenizer::tokenizer_json_text(*tok) == text);
  const auto copy = dir.path() / "copy.json";
  tokenizer::save_tokenizer_json(*tok, copy);
  auto again = tokenizer::load_tokenizer_json(copy);
  CHECK(again->fingerprint() == tok->fingerprint());
}
