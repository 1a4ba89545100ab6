// A chat template's rendering encodes as the whole text does (data/segment_encoding.h), also for
// a SentencePiece-style tokenizer whose pieces, encoded alone, would each gain a leading '▁'.
#include <catch2/catch.hpp>

#include <string>

#include "data/segment_encoding.h"
#include "tokenizer/tokenizer_json.h"

using namespace hftrain;

namespace {

const std::string kFixtures = HFTRAIN_TEST_FIXTURES_DIR "/data";

data::Document chat_document(bool special_tokens) {
  data::Document doc;
  doc.segments = {{"<s>[INST] Say hello [/INST]", false}, {" Hello there", true}, {"</s>", true},
                  {"[INST] Again [/INST]", false}, {" Hello again", true}, {"</s>", true}};
  doc.special_tokens = special_tokens;
  return doc;
}

}  // namespace

TEST_CASE("segment encoding: a rendered chat encodes as its whole text, spans placed in it", "[data][chat]") {
  auto tok = tokenizer::load_tokenizer_json(kFixtures + "/hf_llama2_tokenizer.json");
  const data::Document doc = chat_document(true);
  std::string text;
  std::vector<int32_t> piecewise;
  for (const auto& s : doc.segments) {
    text += s.text;
    const auto ids = tok->encode(s.text, true);
    piecewise.insert(piecewise.end(), ids.begin(), ids.end());
  }
  const std::vector<int32_t> whole = tok->encode(text, true);
  REQUIRE(piecewise != whole);  // each piece gains the Prepend normalizer's '▁': the case at hand

  const data::EncodedSegments e = data::encode_segments(*tok, doc);
  CHECK(e.ids == whole);
  REQUIRE(e.segment_ends.size() == doc.segments.size());
  CHECK(e.segment_ends.back() == whole.size());
  uint32_t begin = 0;
  for (size_t s = 0; s < doc.segments.size(); ++s) {
    const uint32_t end = e.segment_ends[s];
    REQUIRE(end >= begin);
    const std::span<const int32_t> span(e.ids.data() + begin, end - begin);
    INFO("segment " << s << ": '" << doc.segments[s].text << "'");
    // Each segment's tokens spell its text (the '▁' prepended to the whole text aside).
    std::string spelled = tok->decode(span);
    if (s == 0) CHECK(spelled.find("[INST] Say hello [/INST]") != std::string::npos);
    if (s == 1) CHECK(spelled == "Hello there");
    if (s == 2 || s == 5) CHECK(spelled == "</s>");
    if (s == 4) CHECK(spelled == "Hello again");
    begin = end;
  }
}

TEST_CASE("segment encoding: plain documents and chat that splits cleanly keep per-segment encoding",
          "[data][chat]") {
  auto tok = tokenizer::load_tokenizer_json(kFixtures + "/hf_llama2_tokenizer.json");
  // Plain prompt/response documents are hftrain's own format: each segment on its own.
  const data::Document plain = chat_document(false);
  const data::EncodedSegments p = data::encode_segments(*tok, plain);
  std::vector<int32_t> expected;
  for (size_t s = 0; s < plain.segments.size(); ++s) {
    const auto ids = tok->encode(plain.segments[s].text, false);
    expected.insert(expected.end(), ids.begin(), ids.end());
    CHECK(p.segment_ends[s] == expected.size());
  }
  CHECK(p.ids == expected);
  // A single segment is its whole text.
  data::Document one;
  one.segments = {{"<s>hello world</s>", true}};
  one.special_tokens = true;
  CHECK(data::encode_segments(*tok, one).ids == tok->encode("<s>hello world</s>", true));
}
