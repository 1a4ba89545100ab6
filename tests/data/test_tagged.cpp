// Tagged sentences for token classification: JSONL lists and CoNLL columns, every malformed input
// named by file:line and field; tag sets as label sets; each word's tag on its first piece, ids as
// `tokenizers` encodes pre-split words (tokenizers 0.23 on the BERT fixture, is_pretokenized=True),
// truncation that drops the words past the cut; the collator's (B, T) labels.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "data/classification_batch.h"
#include "data/tagged.h"
#include "helpers.h"
#include "tokenizer/tokenizer_json.h"
#include "util/fs.h"

using namespace hftrain;
using Catch::Matchers::Contains;

namespace {

std::vector<data::TaggedSentence> read(const std::string& name, const std::string& text,
                                       const data::TaggedOptions& o = {}) {
  test::TempDir d;
  return data::read_tagged(d.write(name, text), o);
}

std::string read_error(const std::string& name, const std::string& text) {
  return test::data_error([&] { read(name, text); });
}

}  // namespace

TEST_CASE("tagged: JSONL lists of words and tags, CoNLL columns, and their errors", "[data][tagged]") {
  const auto j = read("t.jsonl", "{\"tokens\": [\"Ann\", \"ran\"], \"ner_tags\": [\"B-PER\", \"O\"]}\n\n"
                                 "{\"tokens\": [\"Oslo\"], \"ner_tags\": [3]}\n");
  REQUIRE(j.size() == 2);
  CHECK(j[0].words == std::vector<std::string>{"Ann", "ran"});
  CHECK(j[0].tags == std::vector<std::string>{"B-PER", "O"});
  CHECK(j[1].tags == std::vector<std::string>{"3"});
  CHECK(j[1].origin.ends_with("t.jsonl:3"));
  data::TaggedOptions named;
  named.words_field = "w";
  named.tags_field = "t";
  CHECK(read("n.jsonl", "{\"w\": [\"a\"], \"t\": [\"O\"]}\n", named).size() == 1);
  // CoNLL-2003: the word first, the tag last, -DOCSTART- skipped, sentences apart by blank lines.
  const auto c =
      read("t.conll", "-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\nrejects VBZ B-VP O\r\n\n\nPeter NNP B-NP B-PER\n");
  REQUIRE(c.size() == 2);
  CHECK(c[0].words == std::vector<std::string>{"EU", "rejects"});
  CHECK(c[0].tags == std::vector<std::string>{"B-ORG", "O"});
  CHECK(c[1].origin.ends_with("t.conll:7"));
  CHECK(read("t.bio", "Ann\tB-PER\n").front().tags.front() == "B-PER");

  CHECK_THAT(read_error("t.jsonl", "{\"tokens\": [\"a\", \"b\"], \"ner_tags\": [\"O\"]}\n"),
             Contains("t.jsonl:1: 2 words but 1 tags"));
  CHECK_THAT(read_error("t.jsonl", "{\"token\": [\"a\"], \"ner_tags\": [\"O\"]}\n"),
             Contains("the record has no field 'tokens'"));
  CHECK_THAT(read_error("t.jsonl", "{\"tokens\": \"a b\", \"ner_tags\": [\"O\"]}\n"),
             Contains("'tokens' is a string, not a list"));
  CHECK_THAT(read_error("t.jsonl", "{\"tokens\": [\"a\", \"\"], \"ner_tags\": [\"O\", \"O\"]}\n"),
             Contains("holds \"\", not a non-empty string"));
  CHECK_THAT(read_error("t.jsonl", "{\"tokens\": [\"a\"], \"ner_tags\": [-1]}\n"),
             Contains("not a tag name or a non-negative integer"));
  CHECK_THAT(read_error("t.jsonl", "[1]\n"), Contains("t.jsonl:1: not a JSON object"));
  CHECK_THAT(read_error("t.conll", "word\n"), Contains("t.conll:1: 'word' has one column"));
  CHECK_THAT(read_error("t.conll", "\n\n"), Contains("holds no tagged sentence"));
  CHECK_THAT(read_error("t.csv", "a,b\n"), Contains("cannot tell its format from the extension '.csv'"));
}

TEST_CASE("tagged: tag sets are sorted names or checked ids, unknown tags named", "[data][tagged]") {
  const std::vector<data::TaggedSentence> s = {{{"a", "b"}, {"O", "B-PER"}, "t:1"}, {{"c"}, {"I-PER"}, "t:2"}};
  const auto tags = data::tag_set_of(s, "t");
  CHECK(tags.names == std::vector<std::string>{"B-PER", "I-PER", "O"});
  CHECK(data::tag_ids(s, tags) == std::vector<std::vector<int64_t>>{{2, 0}, {1}});
  const std::vector<data::TaggedSentence> other = {{{"x"}, {"B-LOC"}, "v:4"}};
  CHECK_THAT(test::data_error([&] { data::tag_ids(other, tags); }),
             Contains("v:4: label 'B-LOC' is not one of the 3 labels"));
  const std::vector<data::TaggedSentence> ids = {{{"a", "b"}, {"0", "2"}, "t:1"}};
  CHECK_THAT(test::data_error([&] { data::tag_set_of(ids, "t"); }), Contains("1 never occurs"));
}

TEST_CASE("tagging: each word's tag on its first piece, ids as tokenizers encodes pre-split words", "[data][tagged]") {
  const auto tok = test::bert_tokenizer();
  const data::TaggedSentence s{{"Johnathan", "visited", "New", "York", "yesterday", "!"},
                               {"B-PER", "O", "B-LOC", "I-LOC", "O", "O"}, "t:1"};
  const std::vector<int64_t> tags{0, 3, 1, 2, 3, 3};
  const auto e = data::encode_tagged(*tok, s, tags, 64);
  // tokenizers: [CLS] j ##o ##h ##n ##at ##h ##an v ##is ##it ##ed new y ##or ##k y ##est ##er ##d ##ay ! [SEP]
  CHECK(e.input_ids == std::vector<int32_t>{2, 52, 221, 234, 214, 331, 234, 351, 64, 434, 342, 338, 634, 67, 332,
                                            225, 67, 505, 328, 233, 444, 5, 3});
  constexpr int64_t x = -100;
  CHECK(e.token_labels == std::vector<int64_t>{x, 0, x, x, x, x, x, x, 3, x, x, x, 1, 2, x, x, 3, x, x, x, x, 3, x});
  CHECK(e.token_type_ids == std::vector<int32_t>(23, 0));
  // Truncated to 6: [CLS] and four pieces of the first word, [SEP]; the other words lose their tags.
  const auto cut = data::encode_tagged(*tok, s, tags, 6);
  CHECK(cut.input_ids == std::vector<int32_t>{2, 52, 221, 234, 214, 3});
  CHECK(cut.token_labels == std::vector<int64_t>{x, 0, x, x, x, x});
  CHECK_THROWS_AS(data::encode_tagged(*tok, s, tags, 2), util::ConfigError);

  // The collator: labels (B, T), -100 on padding.
  const std::vector<data::EncodedExample> rows = {cut, data::encode_tagged(*tok, {{"New"}, {"B-LOC"}, "t:2"}, {1}, 64)};
  const auto batch = data::collate_classification(rows, 0);
  CHECK(batch.token_labels);
  CHECK(batch.seq_len == 6);
  CHECK(batch.labels == std::vector<int64_t>{x, 0, x, x, x, x, x, 1, x, x, x, x});
  CHECK(batch.attention_mask == std::vector<int64_t>{1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0});
}
