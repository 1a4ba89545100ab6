// The pieces of the Hugging Face tokenizer.json pipeline on their own: normalizers,
// pre-tokenizers (and the split behaviours under them), post-processors and decoders, each built
// from its JSON as a tokenizer.json holds it. Expected values come from the `tokenizers` library.
#include <catch2/catch.hpp>

#include "tokenizer/hf/hf_decoder.h"
#include "tokenizer/hf/hf_normalizer.h"
#include "tokenizer/hf/hf_post_processor.h"
#include "tokenizer/hf/hf_pre_tokenizer.h"
#include "tokenizer/hf/hf_split.h"
#include "helpers.h"
#include "util/error.h"

using namespace hftrain;
using namespace hftrain::tokenizer;

namespace {

const std::string kName = "t.json";

std::string normalize(const std::string& json, std::string text) {
  auto n = hf::parse_normalizer(hf::Json::parse(json), hf::Where{&kName, "normalizer"});
  REQUIRE(n);
  n->normalize(text);
  return text;
}

std::vector<std::string> pre_tokenize(const std::string& json, const std::string& text) {
  auto p = hf::parse_pre_tokenizer(hf::Json::parse(json), hf::Where{&kName, "pre_tokenizer"});
  REQUIRE(p);
  std::vector<hf::Piece> pieces{hf::Piece{text, true}};
  p->pre_tokenize(pieces);
  std::vector<std::string> out;
  for (auto& piece : pieces) out.push_back(piece.text);
  return out;
}

std::string decode(const std::string& json, std::vector<std::string> tokens) {
  auto d = hf::parse_decoder(hf::Json::parse(json), hf::Where{&kName, "decoder"});
  REQUIRE(d);
  d->decode_chain(tokens);
  std::string out;
  for (const auto& t : tokens) out += t;
  return out;
}

using Strings = std::vector<std::string>;

}  // namespace

TEST_CASE("normalizers: Unicode forms, case and accents", "[data][hf]") {
  CHECK(normalize(R"({"type": "NFC"})", "e\u0301") == "é");
  CHECK(normalize(R"({"type": "NFKC"})", "ﬁ ｆｕｌｌ") == "fi full");
  CHECK(normalize(R"({"type": "Lowercase"})", "İSTANBUL ΟΔΟΣ") == "i̇stanbul οδοσ");
  CHECK(normalize(
            R"({"type": "Sequence", "normalizers": [{"type": "NFD"}, {"type": "StripAccents"}]})",
            "Café naïve ḍ") == "Cafe naive d");
  CHECK(normalize(R"({"type": "Nmt"})",
                  "a\x01"
                  "b\tc\u200b"
                  "d") == "ab c d");
  CHECK(normalize(R"({"type": "ByteLevel"})", "é ") == "Ã©Ġ");
}

TEST_CASE("normalizers: BertNormalizer cleans, pads CJK, strips accents with lowercase",
          "[data][hf]") {
  const std::string bert =
      R"({"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
                               "strip_accents": null, "lowercase": true})";
  const char raw[] = "Héllo\tWörld\0中文\x07 ok";  // a NUL and a BEL go, the tab becomes a space
  CHECK(normalize(bert, std::string(raw, sizeof(raw) - 1)) == "hello world 中  文  ok");
  const std::string cased =
      R"({"type": "BertNormalizer", "lowercase": false, "strip_accents": null})";
  CHECK(normalize(cased, "Héllo") == "Héllo");  // strip_accents follows lowercase
  CHECK(normalize(bert, "हिन्दी") == "हिनदी");   // only non-spacing marks go
}

TEST_CASE("normalizers: Strip, Replace, Prepend as Llama-2 uses them", "[data][hf]") {
  CHECK(normalize(R"({"type": "Strip", "strip_left": true, "strip_right": false})", "  a b  ") ==
        "a b  ");
  CHECK(normalize(R"({"type": "Replace", "pattern": {"Regex": "\\s+"}, "content": " "})",
                  "a \t\n b") == "a b");
  const std::string llama =
      R"({"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"},
                                {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]})";
  CHECK(normalize(llama, "a b") == "▁a▁b");
  CHECK(normalize(llama, "").empty());  // Prepend leaves an empty text empty
}

TEST_CASE("normalizers: unsupported or malformed ones are DataErrors naming the JSON path",
          "[data][hf]") {
  auto error = [](const std::string& json) {
    return test::data_error([&] {
      hf::parse_normalizer(hf::Json::parse(json), hf::Where{&kName, "normalizer"});
    });
  };
  CHECK_THAT(error(R"({"type": "Precompiled", "precompiled_charsmap": "AAAA"})"),
             Catch::Contains("t.json: normalizer.precompiled_charsmap is too short"));
  CHECK_THAT(error(R"({"type": "Unicode"})"),
             Catch::Contains("t.json: normalizer.type is 'Unicode', which hftrain does not support"));
  CHECK_THAT(error(R"({"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Bogus"}]})"),
             Catch::Contains("normalizer.normalizers[1].type is 'Bogus'"));
  CHECK_THAT(error(R"({"type": "Replace", "pattern": {"Regex": "("}, "content": ""})"),
             Catch::Contains("normalizer.pattern.Regex"));
  CHECK_THAT(error(R"({"type": "Prepend"})"), Catch::Contains("normalizer.prepend is missing"));
  CHECK_THAT(error(R"({"type": "Strip", "strip_left": "yes"})"),
             Catch::Contains("normalizer.strip_left is a string"));
  CHECK_THAT(error(R"({"normalizers": []})"), Catch::Contains("normalizer.type is missing"));
  std::string deep = R"({"type": "NFC"})";
  for (int i = 0; i < 300; ++i) deep = R"({"type": "Sequence", "normalizers": [)" + deep + "]}";
  CHECK_THAT(error(deep), Catch::Contains("nests too deeply"));
}

TEST_CASE("split behaviours, as tokenizers' NormalizedString::split", "[data][hf]") {
  auto pieces = [](hf::SplitBehavior b, bool invert) {
    Strings out;
    const std::string text = "a-b--c-";
    for (auto [begin, end] : hf::split(text, hf::Pattern::literal("-"), b, invert))
      out.push_back(text.substr(begin, end - begin));
    return out;
  };
  using B = hf::SplitBehavior;
  CHECK(pieces(B::kRemoved, false) == Strings{"a", "b", "c"});
  CHECK(pieces(B::kRemoved, true) == Strings{"-", "-", "-", "-"});
  CHECK(pieces(B::kIsolated, false) == Strings{"a", "-", "b", "-", "-", "c", "-"});
  CHECK(pieces(B::kMergedWithPrevious, false) == Strings{"a-", "b-", "-", "c-"});
  CHECK(pieces(B::kMergedWithPrevious, true) == Strings{"a", "-b", "-", "-c", "-"});
  CHECK(pieces(B::kMergedWithNext, false) == Strings{"a", "-b", "-", "-c", "-"});
  CHECK(pieces(B::kMergedWithNext, true) == Strings{"a-", "b-", "-", "c-"});
  CHECK(pieces(B::kContiguous, false) == Strings{"a", "-", "b", "--", "c", "-"});
  CHECK(hf::split("", hf::Pattern::literal("-"), B::kIsolated).empty());
  CHECK(hf::replace_all("a-b", hf::Pattern::literal(""), "x") ==
        "a-b");  // an empty pattern matches nothing
}

TEST_CASE("pre-tokenizers: Metaspace, Whitespace, BERT, punctuation, digits, delimiters",
          "[data][hf]") {
  CHECK(
      pre_tokenize(
          R"({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true})",
          "Hey friend  there") == Strings{"▁Hey", "▁friend", "▁", "▁there"});
  CHECK(pre_tokenize(R"({"type": "Metaspace", "prepend_scheme": "never"})", "Hey friend") ==
        Strings{"Hey", "▁friend"});
  CHECK(pre_tokenize(R"({"type": "Metaspace", "add_prefix_space": true, "split": false})", "a b") ==
        Strings{"▁a▁b"});
  CHECK(pre_tokenize(R"({"type": "Whitespace"})", "Hey, friend! é_x 12") ==
        Strings{"Hey", ",", "friend", "!", "é_x", "12"});
  CHECK(pre_tokenize(R"({"type": "WhitespaceSplit"})", "Hey, friend!\u3000x") ==
        Strings{"Hey,", "friend!", "x"});
  CHECK(pre_tokenize(R"({"type": "BertPreTokenizer"})", "Hey, friend!! (x)") ==
        Strings{"Hey", ",", "friend", "!", "!", "(", "x", ")"});
  CHECK(pre_tokenize(R"({"type": "Punctuation", "behavior": "Contiguous"})", "a,,b.") ==
        Strings{"a", ",,", "b", "."});
  CHECK(pre_tokenize(R"({"type": "Digits", "individual_digits": false})", "ab123c4") ==
        Strings{"ab", "123", "c", "4"});
  CHECK(pre_tokenize(R"({"type": "Digits", "individual_digits": true})", "ab123c4") ==
        Strings{"ab", "1", "2", "3", "c", "4"});
  CHECK(pre_tokenize(R"({"type": "CharDelimiterSplit", "delimiter": "x"})", "axbxxc") ==
        Strings{"a", "b", "c"});
}

TEST_CASE("pre-tokenizers: ByteLevel, Split regex and Sequence", "[data][hf]") {
  CHECK(pre_tokenize(R"({"type": "ByteLevel", "add_prefix_space": true, "use_regex": true})",
                     "Hi there") == Strings{"ĠHi", "Ġthere"});
  CHECK(pre_tokenize(R"({"type": "ByteLevel", "add_prefix_space": false, "use_regex": false})",
                     "é x") == Strings{"Ã©Ġx"});
  CHECK(
      pre_tokenize(
          R"({"type": "Split", "pattern": {"Regex": "\\d+"}, "behavior": "Isolated", "invert": false})",
          "ab12cd3") == Strings{"ab", "12", "cd", "3"});
  CHECK(pre_tokenize(R"({"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"},
                        {"type": "Digits", "individual_digits": true}]})",
                     "a12 b") == Strings{"a", "1", "2", "b"});
  CHECK_THAT(test::data_error([] {
               hf::parse_pre_tokenizer(
                   hf::Json::parse(
                       R"({"type": "Sequence", "pretokenizers": [{"type": "UnicodeScripts"}]})"),
                   hf::Where{&kName, "pre_tokenizer"});
             }),
             Catch::Contains("pre_tokenizer.pretokenizers[0].type is 'UnicodeScripts'"));
  CHECK_THAT(test::data_error([] {
               hf::parse_pre_tokenizer(
                   hf::Json::parse(
                       R"({"type": "Split", "pattern": {"String": "x"}, "behavior": "Sideways"})"),
                   hf::Where{&kName, "pre_tokenizer"});
             }),
             Catch::Contains("pre_tokenizer.behavior is 'Sideways'"));
}

TEST_CASE("a Split regex that backtracks without end is named by file and JSON path", "[data][hf]") {
  // (a+)+$ on a run of a's that ends in b: exponential backtracking, stopped by PCRE2's match limit.
  const std::string text = std::string(40, 'a') + "b";
  CHECK_THAT(test::data_error([&] {
               pre_tokenize(R"({"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"},
                                {"type": "Split", "pattern": {"Regex": "(a+)+$"}, "behavior": "Isolated"}]})",
                            text);
             }),
             Catch::Contains("t.json: pre_tokenizer.pretokenizers[1]") &&
                 Catch::Contains("splitting text with the regex failed"));
}

TEST_CASE("Metaspace prepend_scheme first: only at the start of the input", "[data][hf]") {
  auto p = hf::parse_pre_tokenizer(
      hf::Json::parse(R"({"type": "Metaspace", "prepend_scheme": "first", "split": false})"),
      hf::Where{&kName, "pre_tokenizer"});
  std::vector<hf::Piece> pieces{hf::Piece{"a b", true}, hf::Piece{"c", false}};
  p->pre_tokenize(pieces);
  REQUIRE(pieces.size() == 2);
  CHECK(pieces[0].text == "▁a▁b");
  CHECK(pieces[1].text == "c");
}

TEST_CASE("decoders: WordPiece, BPE, Metaspace, byte fallback, Strip", "[data][hf]") {
  CHECK(decode(R"({"type": "WordPiece", "prefix": "##", "cleanup": true})",
               {"hel", "##lo", ",", "world", "do", "n't", "."}) == "hello, world don't.");
  CHECK(decode(R"({"type": "WordPiece", "cleanup": false})", {"hel", "##lo", ",", "world"}) ==
        "hello , world");
  CHECK(decode(R"({"type": "BPEDecoder", "suffix": "</w>"})", {"hel", "lo</w>", "wor", "ld</w>"}) ==
        "hello world");
  CHECK(decode(R"({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always"})",
               {"▁Hi", "▁there"}) == "Hi there");
  CHECK(decode(R"({"type": "Metaspace", "prepend_scheme": "never"})", {"▁Hi", "▁there"}) ==
        " Hi there");
  const std::string llama = R"({"type": "Sequence", "decoders": [
      {"type": "Replace", "pattern": {"String": "▁"}, "content": " "}, {"type": "ByteFallback"},
      {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]})";
  CHECK(decode(llama, {"▁Hi", "▁", "<0xE4>", "<0xB8>", "<0xAD>", "▁x"}) == "Hi 中 x");
  CHECK(decode(R"({"type": "ByteFallback"})", {"<0x41>", "<0xZZ>", "a"}) == "A<0xZZ>a");
  CHECK(decode(R"({"type": "Strip", "content": "x", "start": 2, "stop": 1})", {"xxxaxx"}) == "xax");
  CHECK(decode(R"({"type": "Strip", "content": "x", "start": 5, "stop": 5})", {"xx"}).empty());
  // A cut character's bytes are kept (tokenizers would print U+FFFD), so pieces join up again.
  CHECK(decode(R"({"type": "ByteFallback"})", {"<0xE4>", "<0xB8>"}) == "\xe4\xb8");
  CHECK(decode(R"({"type": "ByteLevel"})", {"Ã", "©", "<|x|>"}) == "é<|x|>");
}

TEST_CASE("post-processors: templates, BERT and RoBERTa pairs, sequences", "[data][hf]") {
  auto parse = [](const std::string& json, int32_t vocab_size = 1000) {
    return hf::parse_post_processor(hf::Json::parse(json), hf::Where{&kName, "post_processor"},
                                    vocab_size);
  };
  auto bert = parse(R"({"type": "TemplateProcessing",
      "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                 {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
      "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
               {"SpecialToken": {"id": "[SEP]", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}},
               {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
      "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [101], "tokens": ["[CLS]"]},
                         "[SEP]": {"id": "[SEP]", "ids": [102], "tokens": ["[SEP]"]}}})");
  const std::vector<int32_t> a{7, 8}, b{9};
  CHECK(bert->process(a, nullptr) == std::vector<int32_t>{101, 7, 8, 102});
  CHECK(bert->process(a, &b) == std::vector<int32_t>{101, 7, 8, 102, 9, 102});
  CHECK(bert->single_prefix() == std::vector<int32_t>{101});
  CHECK(bert->single_suffix() == std::vector<int32_t>{102});
  auto roberta = parse(
      R"({"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0], "trim_offsets": true})");
  CHECK(roberta->process(a, &b) == std::vector<int32_t>{0, 7, 8, 2, 2, 9, 2});
  auto seq =
      parse(R"({"type": "Sequence", "processors": [{"type": "ByteLevel"}, {"type": "BertProcessing",
                       "sep": ["[SEP]", 3], "cls": ["[CLS]", 4]}]})");
  CHECK(seq->process(a, nullptr) == std::vector<int32_t>{4, 7, 8, 3});
  CHECK_THAT(
      test::data_error([&] {
        parse(
            R"({"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}],
                         "special_tokens": {}})");
      }),
      Catch::Contains(
          "post_processor.single[0].SpecialToken.id names '<s>', missing from special_tokens"));
  // Every special token id must be in the vocabulary, wherever the processor names it.
  auto error = [&](const std::string& json) { return test::data_error([&] { parse(json, 100); }); };
  CHECK_THAT(error(R"({"type": "TemplateProcessing", "single": [{"Sequence": {"id": "A"}}],
                       "special_tokens": {"[SEP]": {"id": "[SEP]", "ids": [3, 100]}}})"),
             Catch::Contains("t.json: post_processor.special_tokens.'[SEP]'.ids[1] is token id "
                             "100, outside the vocabulary (ids 0 to 99)"));
  CHECK_THAT(error(R"({"type": "BertProcessing", "sep": ["[SEP]", -1], "cls": ["[CLS]", 2]})"),
             Catch::Contains("post_processor.sep[1] is token id -1, outside the vocabulary"));
  CHECK_THAT(
      error(R"({"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 4000000000]})"),
      Catch::Contains("post_processor.cls[1] is token id 4000000000, outside the vocabulary"));
  CHECK_THAT(error(R"({"type": "Sequence", "processors": [{"type": "ByteLevel"},
                       {"type": "BertProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 100]}]})"),
             Catch::Contains("post_processor.processors[1].cls[1] is token id 100"));
  CHECK_THAT(error(R"({"type": "BertProcessing", "sep": ["[SEP]", "3"], "cls": ["[CLS]", 2]})"),
             Catch::Contains("post_processor.sep[1] is a string, not an integer"));
}
