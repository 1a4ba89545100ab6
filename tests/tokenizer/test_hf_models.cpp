// The tokenizer.json models on their own (BPE with byte fallback, unk, subword affixes and
// ignore_merges; WordPiece; WordLevel; Unigram's Viterbi segmentation, its ties, unknown
// characters and the quirks of `tokenizers` it keeps) and the added-token vocabulary (lstrip,
// rstrip, single_word, normalized, special). Expected ids come from the `tokenizers` library.
#include <catch2/catch.hpp>

#include "tokenizer/hf/hf_added_tokens.h"
#include "tokenizer/hf/hf_json_float.h"
#include "tokenizer/hf/hf_model.h"
#include "helpers.h"

using namespace hftrain;
using namespace hftrain::tokenizer;
using Ids = std::vector<int32_t>;

namespace {

const std::string kName = "m.json";

std::unique_ptr<hf::Model> model(const std::string& json) {
  return hf::parse_model(hf::Json::parse(json), hf::Where{&kName, "model"});
}

// A Unigram model of `vocab` ([[piece, score], ...]) with unk_id 0 unless `options` say otherwise.
std::unique_ptr<hf::Model> unigram(const std::string& vocab,
                                   const std::string& options = R"("unk_id": 0)") {
  return model(R"({"type": "Unigram", )" + options + R"(, "vocab": )" + vocab + "}");
}

Ids tokenize(const hf::Model& m, const std::string& piece) {
  Ids out;
  m.tokenize(piece, out);
  return out;
}

const std::string kFallbackVocab =
    R"("vocab": {"<unk>": 0, "a": 1, "b": 2, "ab": 3, "<0xC3>": 4, "<0xA9>": 5, "c": 6},
                                      "merges": [["a", "b"]])";

}  // namespace

TEST_CASE("BPE: byte fallback, then a fused unk for characters without byte tokens", "[data][hf]") {
  auto m =
      model(R"({"type": "BPE", "unk_token": "<unk>", "fuse_unk": true, "byte_fallback": true, )" +
            kFallbackVocab + "}");
  CHECK(tokenize(*m, "abé c") == Ids{3, 4, 5, 0, 6});  // no <0x20>: the space is unknown
  CHECK(tokenize(*m, "abécxyzb") == Ids{3, 4, 5, 6, 0, 2});
}

TEST_CASE("BPE: unknown characters, fused or one unk each, or dropped without an unk token",
          "[data][hf]") {
  auto fused =
      model(R"({"type": "BPE", "unk_token": "<unk>", "fuse_unk": true, )" + kFallbackVocab + "}");
  CHECK(tokenize(*fused, "abéxyb") == Ids{3, 0, 2});
  auto separate =
      model(R"({"type": "BPE", "unk_token": "<unk>", "fuse_unk": false, )" + kFallbackVocab + "}");
  CHECK(tokenize(*separate, "abéxyb") == Ids{3, 0, 0, 0, 2});
  auto none = model(R"({"type": "BPE", )" + kFallbackVocab + "}");
  CHECK(tokenize(*none, "abéxyb") == Ids{3, 2});
}

TEST_CASE("BPE: continuing-subword prefix, end-of-word suffix, ignore_merges", "[data][hf]") {
  auto prefixed = model(R"({"type": "BPE", "unk_token": "<unk>", "continuing_subword_prefix": "##",
      "vocab": {"<unk>": 0, "a": 1, "##b": 2, "##c": 3, "##bc": 4}, "merges": [["##b", "##c"]]})");
  CHECK(tokenize(*prefixed, "abc") == Ids{1, 4});
  auto suffixed = model(R"({"type": "BPE", "unk_token": "<unk>", "end_of_word_suffix": "</w>",
      "vocab": {"<unk>": 0, "a": 1, "b": 2, "c</w>": 3, "ab": 4, "abc</w>": 5, "b</w>": 6},
      "merges": [["a", "b"], ["ab", "c</w>"]]})");
  CHECK(tokenize(*suffixed, "abc") == Ids{5});
  CHECK(tokenize(*suffixed, "ab") == Ids{1, 6});
  const std::string vocab =
      R"("vocab": {"a": 0, "b": 1, "c": 2, "abc": 3, "ab": 4}, "merges": ["a b"])";
  CHECK(tokenize(*model(R"({"type": "BPE", "ignore_merges": true, )" + vocab + "}"), "abc") ==
        Ids{3});
  CHECK(tokenize(*model(R"({"type": "BPE", "ignore_merges": true, )" + vocab + "}"), "abcab") ==
        Ids{4, 2, 4});
  CHECK(tokenize(*model(R"({"type": "BPE", "ignore_merges": false, )" + vocab + "}"), "abc") ==
        Ids{4, 2});
}

TEST_CASE("BPE: inconsistent files are DataErrors naming the merge or key", "[data][hf]") {
  auto error = [](const std::string& json) { return test::data_error([&] { model(json); }); };
  CHECK_THAT(
      error(R"({"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": [["a", "b"]]})"),
      Catch::Contains("model.merges[0] merges 'a' and 'b', but the result is not in model.vocab"));
  CHECK_THAT(error(R"({"type": "BPE", "vocab": {"a": 0}, "merges": ["a b c"]})"),
             Catch::Contains("model.merges[0]"));
  CHECK_THAT(error(R"({"type": "BPE", "unk_token": "<unk>", "vocab": {"a": 0}, "merges": []})"),
             Catch::Contains("model.unk_token names '<unk>', which is not in model.vocab"));
  CHECK_THAT(error(R"({"type": "BPE", "dropout": 0.1, "vocab": {"a": 0}, "merges": []})"),
             Catch::Contains("model.dropout"));
  CHECK_THAT(error(R"({"type": "BPE", "vocab": {"a": -1}, "merges": []})"),
             Catch::Contains("model.vocab.'a' is -1"));
  CHECK_THAT(error(R"({"type": "BPE", "vocab": {"a": 0, "b": 0}, "merges": []})"),
             Catch::Contains("gives id 0 to both"));
  CHECK_THAT(error(R"({"type": "BPE", "vocab": {"a": 99999999999}, "merges": []})"),
             Catch::Contains("above"));
  CHECK_THAT(error(R"({"type": "Unigram", "vocab": [["a", 0.0]], "unk_id": 1})"),
             Catch::Contains("model.unk_id is 1, but model.vocab has 1 pieces"));
  CHECK_THAT(error(R"({"type": "SentencePiece", "vocab": [["a", 0.0]]})"),
             Catch::Contains("model.type is 'SentencePiece'"));
}

TEST_CASE("WordPiece: longest prefix first, ## continuations, unk for what cannot be covered",
          "[data][hf]") {
  auto m = model(R"({"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
      "max_input_chars_per_word": 8,
      "vocab": {"[UNK]": 0, "un": 1, "##aff": 2, "##able": 3, "aff": 4, "##a": 5, "u": 6, "##n": 7}})");
  CHECK(tokenize(*m, "unaffable") == Ids{0});  // 9 characters: longer than max_input_chars_per_word
  CHECK(tokenize(*m, "unaff") == Ids{1, 2});
  CHECK(tokenize(*m, "unx") == Ids{0});
  CHECK_THAT(test::data_error([] { model(R"({"type": "WordPiece", "vocab": {"a": 0}})"); }),
             Catch::Contains("model.unk_token names '[UNK]', which is not in model.vocab"));
}

TEST_CASE("WordLevel: whole pieces or unk", "[data][hf]") {
  auto m = model(
      R"({"type": "WordLevel", "unk_token": "<unk>", "vocab": {"<unk>": 0, "hello": 1, "world": 2}})");
  CHECK(tokenize(*m, "hello") == Ids{1});
  CHECK(tokenize(*m, "there") == Ids{0});
}

namespace {

hf::AddedToken token(int32_t id, std::string content, bool special, bool normalized,
                     bool lstrip = false, bool rstrip = false, bool single_word = false) {
  hf::AddedToken t;
  t.id = id;
  t.content = std::move(content);
  t.special = special;
  t.normalized = normalized;
  t.lstrip = lstrip;
  t.rstrip = rstrip;
  t.single_word = single_word;
  return t;
}

hf::AddedVocabulary added(const std::vector<hf::AddedToken>& tokens,
                          const hf::Normalizer* n = nullptr) {
  static const hf::Vocab kVocab = [] {
    hf::Vocab v;
    v.ids = {{"x", 0}, {"[CLS]", 1}};
    v.tokens = {"x", "[CLS]"};
    v.present = {true, true};
    return v;
  }();
  return hf::AddedVocabulary(tokens, kVocab, n);
}

std::vector<std::pair<std::string, int32_t>> segments(const hf::AddedVocabulary& v,
                                                      const std::string& text,
                                                      bool normalized_set = false,
                                                      bool allow_special = true) {
  std::vector<std::pair<std::string, int32_t>> out;
  for (const auto& s : v.split(text, normalized_set, allow_special))
    out.emplace_back(text.substr(s.begin, s.end - s.begin), s.id);
  return out;
}

}  // namespace

TEST_CASE("added tokens: ids as tokenizers assigns them, leftmost-longest matches", "[data][hf]") {
  const auto cls = token(7, "[CLS]", true, false);
  const auto a = token(2, "<a>", true, false);
  const auto ab = token(3, "<a>b", false, false);
  auto v = added({cls, a, ab});
  CHECK(v.id_of("[CLS]") == 1);  // the model's id wins over the file's
  CHECK(v.id_of("<a>") == 2);
  CHECK(v.id_of("<a>b") == 3);
  using Segs = std::vector<std::pair<std::string, int32_t>>;
  CHECK(segments(v, "x<a>b<a>[CLS]") == Segs{{"x", -1}, {"<a>b", 3}, {"<a>", 2}, {"[CLS]", 1}});
  // Without special tokens their text is text; the ordinary added token is still found.
  CHECK(segments(v, "x<a>b<a>", false, false) == Segs{{"x", -1}, {"<a>b", 3}, {"<a>", -1}});
}

TEST_CASE("added tokens: lstrip, rstrip, single_word", "[data][hf]") {
  using Segs = std::vector<std::pair<std::string, int32_t>>;
  const auto mask = token(5, "<mask>", true, false, /*lstrip=*/true);
  CHECK(segments(added({mask}), "A  <mask> b") == Segs{{"A", -1}, {"  <mask>", 2}, {" b", -1}});
  const auto r = token(5, "ab", false, false, false, /*rstrip=*/true);
  CHECK(segments(added({r}), "xab  cd") == Segs{{"x", -1}, {"ab  ", 2}, {"cd", -1}});
  const auto word = token(5, "yy", false, false, /*lstrip=*/true, false, /*single_word=*/true);
  CHECK(segments(added({word}), "x  yy z yyx  yy") ==
        Segs{{"x", -1}, {"  yy", 2}, {" z yyx", -1}, {"  yy", 2}});
}

TEST_CASE("added tokens: normalized ones are matched after normalization", "[data][hf]") {
  auto lower = hf::parse_normalizer(hf::Json::parse(R"({"type": "Lowercase"})"),
                                    hf::Where{&kName, "normalizer"});
  const auto hello = token(5, "Hello", false, /*normalized=*/true);
  auto v = added({hello}, lower.get());
  using Segs = std::vector<std::pair<std::string, int32_t>>;
  CHECK(segments(v, "say hello", true) == Segs{{"say ", -1}, {"hello", 2}});
  CHECK(segments(v, "say hello", false) == Segs{{"say hello", -1}});  // not in the raw set
}

TEST_CASE("Unigram tokenizer: the segmentation with the highest total score", "[data][hf]") {
  auto m = unigram(R"([["<unk>", 0], ["a", 0], ["b", 0], ["c", 0], ["d", 0], ["cd", 1.0],
                       ["ab", 2.0], ["abc", 5.0], ["abcd", 10.0]])");
  CHECK(m->kind() == "Unigram");
  CHECK(tokenize(*m, "abcdacdxx") == Ids{8, 1, 5, 0});  // abcd a cd, then xx as one unk
  CHECK(tokenize(*m, "abc") == Ids{7});
  CHECK(m->vocab().tokens.size() == 9);
  CHECK(m->vocab().find("cd") == 5);
}

TEST_CASE("Unigram tokenizer: ties go to the path whose last piece starts first", "[data][hf]") {
  auto two = unigram(R"([["<unk>", 0], ["a", -1.0], ["b", -1.0], ["ab", -2.0]])");
  CHECK(tokenize(*two, "ab") == Ids{3});  // ab == a + b: the longer last piece
  auto three = unigram(
      R"([["<unk>", 0], ["a", -1.0], ["b", -1.0], ["c", -1.0], ["ab", -2.0], ["bc", -2.0]])");
  CHECK(tokenize(*three, "abc") == Ids{1, 5});  // a|bc, ab|c and a|b|c tie: a bc
}

TEST_CASE("Unigram tokenizer: unknown characters, fused, as bytes, or an error without unk_id",
          "[data][hf]") {
  auto m = unigram(R"([["<unk>", 0], ["a", -1.0], ["b", -1.0]])");
  CHECK(tokenize(*m, "axyb") == Ids{1, 0, 2});  // x and y: one unk
  CHECK(tokenize(*m, "é") == Ids{0});

  const std::string bytes = R"([["<unk>", 0], ["a", -1.0], ["<0xC3>", -1.0], ["<0xA9>", -1.0]])";
  auto fallback = unigram(bytes, R"("unk_id": 0, "byte_fallback": true)");
  CHECK(tokenize(*fallback, "aé") == Ids{1, 2, 3});
  // The unknown run "éxé" has no <0x78> for x: all of it is one unk.
  CHECK(tokenize(*fallback, "aéxé") == Ids{1, 0});
  CHECK(tokenize(*unigram(bytes), "aé") == Ids{1, 0});  // byte_fallback false

  auto no_unk = unigram(R"([["a", 0], ["b", 0]])", R"("unk_id": null)");
  CHECK(tokenize(*no_unk, "ab") == Ids{0, 1});
  CHECK_THAT(test::data_error([&] { tokenize(*no_unk, "ax"); }),
             Catch::Contains("m.json: no piece of the Unigram model covers 'x'") &&
                 Catch::Contains("model.unk_id is null"));
  // An uncovered character is no error while a better path skips it, as in tokenizers.
  auto skipped = unigram(R"([["a", 0], ["ab", 0], ["abc", 5.0]])", R"("byte_fallback": false)");
  CHECK(tokenize(*skipped, "abc") == Ids{2});
}

TEST_CASE("Unigram tokenizer: the quirks of tokenizers it keeps", "[data][hf]") {
  // Equal pieces: the last id, with its score.
  CHECK(tokenize(*unigram(R"([["<unk>", 0], ["a", -1.0], ["a", -2.0]])"), "aa") == Ids{2, 2});
  // An empty piece is never found.
  CHECK(tokenize(*unigram(R"([["<unk>", 0], ["", -1.0], ["a", -1.0]])"), "a") == Ids{2});
  // With positive scores unknown characters can beat a piece (unk scores min - 10 each); the
  // fused run is then looked up again and found.
  CHECK(tokenize(*unigram(R"([["<unk>", 100.0], ["xy", 25.0]])"), "xy") == Ids{1});
  // The text of the unk piece is an ordinary piece, under the id the vocabulary gives it last.
  CHECK(tokenize(*unigram(R"([["<unk>", 0], ["x", -1.0], ["<unk>", -1.0]])"), "x<unk>y") ==
        Ids{1, 2, 0});
}

TEST_CASE("Unigram tokenizer: scores are read as tokenizers reads them", "[data][hf]") {
  // serde_json without float_roundtrip: 17-digit significands above 2^53 can be 1 ulp off.
  // Expected values: what tokenizers 0.23 wrote back after reading each.
  CHECK(hf::tokenizers_double(-0.43561181362301915) == -0.4356118136230191);
  CHECK(hf::tokenizers_double(-12.563669634938593) == -12.563669634938591);
  CHECK(hf::tokenizers_double(-9.634415443986683) == -9.634415443986684);
  for (double same : {-1e-05, -3.0000000000000004, -7.105427357601002e-15, -123456.78901234567, 0.0,
                      -2.306333065032959, 1e300, -5e-324})
    CHECK(hf::tokenizers_double(same) == same);
}

TEST_CASE("Unigram tokenizer: malformed models are DataErrors naming the key", "[data][hf]") {
  auto error = [](const std::string& json) { return test::data_error([&] { model(json); }); };
  CHECK_THAT(error(R"({"type": "Unigram", "vocab": {"a": 0}})"),
             Catch::Contains("m.json: model.vocab is an object, not an array"));
  CHECK_THAT(error(R"({"type": "Unigram", "unk_id": 0})"),
             Catch::Contains("model.vocab is missing"));
  CHECK_THAT(error(R"({"type": "Unigram", "vocab": [["a", 0], ["b"]]})"),
             Catch::Contains("model.vocab[1] is not a [piece, score] pair"));
  CHECK_THAT(error(R"({"type": "Unigram", "vocab": [[1, 0.5]]})"),
             Catch::Contains("model.vocab[0][0] is an integer, not a string"));
  CHECK_THAT(error(R"({"type": "Unigram", "vocab": [["a", "-1.5"]]})"),
             Catch::Contains("model.vocab[0][1] is not a number"));
  CHECK_THAT(error(R"({"type": "Unigram", "vocab": [["a", null]]})"),
             Catch::Contains("model.vocab[0][1] is not a number"));
  CHECK_THAT(error(R"({"type": "Unigram", "vocab": [["a", 0]], "unk_id": 1})"),
             Catch::Contains("model.unk_id is 1, but model.vocab has 1 pieces"));
  CHECK_THAT(error(R"({"type": "Unigram", "vocab": [], "unk_id": 0})"),
             Catch::Contains("model.unk_id is 0, but model.vocab has 0 pieces"));
  CHECK_THAT(error(R"({"type": "Unigram", "vocab": [["a", 0]], "unk_id": -1})"),
             Catch::Contains("model.unk_id is -1"));
  CHECK_THAT(error(R"({"type": "Unigram", "vocab": [["a", 0]], "unk_id": 0.5})"),
             Catch::Contains("model.unk_id is a number, not an integer"));
  CHECK_THAT(error(R"({"type": "Unigram", "vocab": [["a", 0]], "byte_fallback": 1})"),
             Catch::Contains("model.byte_fallback is an integer, not true or false"));
}
