// Labelled classification data: RFC 4180 CSV (quoting, doubled quotes, embedded delimiters and
// line breaks) and JSONL, every malformed input named by file:line and column; label sets (names
// sorted, integer ids checked); tokenisation of texts and pairs as `tokenizers` does it (ids and
// type ids from its TemplateProcessing, longest_first truncation; expected values from
// tokenizers 0.23 on the BERT fixture); the padding collator.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "data/classification_batch.h"
#include "data/csv_reader.h"
#include "tokenizer/hf/hf_post_processor.h"
#include "data/labelled.h"
#include "tokenizer/tokenizer_json.h"
#include "helpers.h"
#include "util/fs.h"

using namespace hftrain;
using Catch::Matchers::Contains;
using Ids = std::vector<int32_t>;

namespace {

std::vector<data::CsvRecord> csv(const std::string& text, char delimiter = ',') {
  std::vector<data::CsvRecord> out;
  data::read_csv("t.csv", text, delimiter,
                 [&](data::CsvRecord&& r) { out.push_back(std::move(r)); });
  return out;
}

std::string csv_error(const std::string& text) {
  return test::data_error([&] { csv(text); });
}

std::vector<data::LabelledExample> examples(const std::vector<std::string>& labels) {
  std::vector<data::LabelledExample> out;
  for (size_t i = 0; i < labels.size(); ++i)
    out.push_back({"text", "", labels[i], "train.csv:" + std::to_string(i + 2)});
  return out;
}

data::EncodedExample encode(const tokenizer::Tokenizer& tok, const std::string& a, const std::string& b,
                            int64_t max_length) {
  return data::encode_example(tok, {a, b, "x", "t.csv:2"}, 0, max_length);
}

}  // namespace

TEST_CASE("csv: RFC 4180 quoting, CRLF, blank lines and a byte order mark", "[data][labelled]") {
  const auto records =
      csv("\xEF\xBB\xBFtext,label\r\n\"a, b\",1\r\n\r\n\"say "
          "\"\"hi\"\"\",0\n\"two\nlines\",1\n,\"\"\nlast,2");
  REQUIRE(records.size() == 6);
  CHECK(records[0].fields == std::vector<std::string>{"text", "label"});
  CHECK(records[1].fields == std::vector<std::string>{"a, b", "1"});
  CHECK(records[2].fields == std::vector<std::string>{"say \"hi\"", "0"});
  CHECK(records[2].line == 4);  // the blank line 3 is no record
  CHECK(records[3].fields == std::vector<std::string>{"two\nlines", "1"});
  CHECK(records[4].line == 7);  // the quoted line break counted
  CHECK(records[4].fields == std::vector<std::string>{"", ""});
  CHECK(records[5].fields == std::vector<std::string>{"last", "2"});  // no final line break
  CHECK(csv("a\tb\n\"x\ty\"\tz\n", '\t')[1].fields == std::vector<std::string>{"x\ty", "z"});
}

TEST_CASE("csv: malformed quoting and field counts name the line", "[data][labelled]") {
  CHECK_THAT(csv_error("text,label\nsay \"hi\",1\n"),
             Contains("t.csv:2") && Contains("quote inside an unquoted"));
  CHECK_THAT(csv_error("text,label\n\"hi\" there,1\n"),
             Contains("t.csv:2") && Contains("after its closing quote"));
  CHECK_THAT(csv_error("text,label\nok,1\n\"never\nclosed,1\n"),
             Contains("t.csv:3") && Contains("never closes"));
  CHECK_THAT(csv_error("text,label\na,b,1\n"),
             Contains("t.csv:2") && Contains("3 fields, the header has 2"));
}

TEST_CASE("labelled: CSV columns, text pairs and missing columns", "[data][labelled]") {
  test::TempDir dir;
  data::LabelledOptions o;
  o.text_column = "sentence1";
  o.text_pair_column = "sentence2";
  const auto file = dir.write(
      "train.csv", "idx,sentence1,sentence2,label\n0,\"A, b\",c,yes\n1,d,\"e\"\"f\",no\n");
  const auto ex = data::read_labelled(file, o);
  REQUIRE(ex.size() == 2);
  CHECK(ex[0].text == "A, b");
  CHECK(ex[0].text_pair == "c");
  CHECK(ex[1].text_pair == "e\"f");
  CHECK(ex[1].label == "no");
  CHECK(ex[1].origin == file.string() + ":3");

  o.text_pair_column = "sentence3";
  CHECK_THAT(test::data_error([&] { data::read_labelled(file, o); }),
             Contains("train.csv:1") && Contains("no column 'sentence3'"));
  const auto empty = dir.write("empty-text.csv", "sentence1,label\n\"\",1\nb,0\n");
  o.text_pair_column.clear();
  CHECK_THAT(test::data_error([&] { data::read_labelled(empty, o); }),
             Contains("empty-text.csv:2") && Contains("'sentence1' is empty"));
  const auto header_only = dir.write("header.csv", "sentence1,label\n");
  CHECK_THAT(test::data_error([&] { data::read_labelled(header_only, o); }),
             Contains("no labelled record"));
  const auto unknown = dir.write("data.parquet", "x");
  CHECK_THAT(test::data_error([&] { data::read_labelled(unknown, o); }), Contains("'.parquet'"));
}

TEST_CASE("labelled: JSONL fields, label types and errors with their line", "[data][labelled]") {
  test::TempDir dir;
  data::LabelledOptions o;
  const auto file =
      dir.write("train.jsonl",
                "{\"text\": \"good\", \"label\": 1}\n\n{\"text\": \"bad\", \"label\": 0}\n"
                "{\"text\": \"meh\", \"label\": true}\n");
  const auto ex = data::read_labelled(file, o);
  REQUIRE(ex.size() == 3);
  CHECK(ex[0].label == "1");
  CHECK(ex[1].origin == file.string() + ":3");
  CHECK(ex[2].label == "true");

  auto error = [&](const std::string& text) {
    const auto f = dir.write("bad.jsonl", "{\"text\": \"ok\", \"label\": 0}\n" + text + "\n");
    return test::data_error([&] { data::read_labelled(f, o); });
  };
  CHECK_THAT(error("{\"text\": \"x\", \"lable\": 1}"),
             Contains("bad.jsonl:2") && Contains("no field 'label'"));
  try {
    data::read_labelled(dir.write("typo.jsonl", "{\"text\": \"x\", \"lable\": 1}\n"), o);
    FAIL("expected a DataError");
  } catch (const util::DataError& e) {
    CHECK_THAT(e.hint(), Contains("did you mean 'lable'"));
  }
  CHECK_THAT(error("{\"text\": \"x\", \"label\": 1.5}"),
             Contains("bad.jsonl:2") && Contains("'label' is a number"));
  CHECK_THAT(error("{\"text\": 3, \"label\": 1}"),
             Contains("bad.jsonl:2") && Contains("'text' is a number"));
  CHECK_THAT(error("{\"text\": \"x\", \"label\": 1"),
             Contains("bad.jsonl:2") && Contains("malformed JSON"));
  CHECK_THAT(error("[1, 2]"), Contains("bad.jsonl:2") && Contains("not a JSON object"));
  CHECK_THAT(error("{\"text\": \"x\", \"label\": 1e999999}"), Contains("bad.jsonl:2") && Contains("malformed JSON"));
  CHECK_THAT(error("{\"text\": \"  \", \"label\": 1}"),
             Contains("bad.jsonl:2") && Contains("'text' is empty"));
}

TEST_CASE("labelled: label sets are sorted names or checked integer ids", "[data][labelled]") {
  const auto names = data::label_set_of(examples({"pos", "neg", "neutral", "neg"}), "train.csv");
  CHECK(names.names == std::vector<std::string>{"neg", "neutral", "pos"});
  CHECK(data::label_ids(examples({"pos", "neg"}), names) == std::vector<int64_t>{2, 0});

  const auto ids = data::label_set_of(examples({"2", "0", "1", "0"}), "train.csv");
  CHECK(ids.names == std::vector<std::string>{"0", "1", "2"});
  CHECK(data::label_ids(examples({"2", "0"}), ids) == std::vector<int64_t>{2, 0});
  // "01" and "-1" are names, so the labels are sorted as text.
  CHECK(data::label_set_of(examples({"-1", "1"}), "t").names ==
        std::vector<std::string>{"-1", "1"});

  CHECK_THAT(test::data_error([] {
               data::label_set_of(examples({"0", "3", "1"}), "train.csv");
             }),
             Contains("train.csv") && Contains("2 never occurs"));
  // A class id of 2^31 is refused by count, without listing (or allocating) two billion classes.
  CHECK_THAT(test::data_error([] {
               data::label_set_of(examples({"0", "2147483648", "1"}), "train.csv");
             }),
             Contains("2147483646 of 0..2147483648 never occur (2, 3, 4, 5, 6, ...)"));
  CHECK_THAT(test::data_error([] {
               data::label_set_of(examples({"a", "a"}), "train.csv");
             }),
             Contains("every example has the label 'a'"));
  CHECK_THAT(test::data_error([&] {
               data::label_ids(examples({"neg", "positive"}), names);
             }),
             Contains("train.csv:3") &&
                 Contains("label 'positive' is not one of the 3 labels (neg, neutral, pos)"));

  // A fixed label list (a pretrained classifier's id2label) takes names and integer ids.
  const data::LabelSet fixed{{"negative", "positive"}};
  CHECK(data::label_ids(examples({"positive", "0", "1"}), fixed) == std::vector<int64_t>{1, 0, 1});
  CHECK_THAT(test::data_error([&] { data::label_ids(examples({"2"}), fixed); }),
             Contains("label '2'"));
}

TEST_CASE("classification: longest_first truncation as tokenizers does it", "[data][labelled]") {
  using P = std::pair<size_t, size_t>;
  // (a, b, budget) -> kept, measured with tokenizers 0.23 (budget = max_length - 3 specials).
  CHECK(data::truncated_lengths(3, 5, 7) == P{3, 4});
  CHECK(data::truncated_lengths(5, 3, 7) == P{4, 3});
  CHECK(data::truncated_lengths(6, 6, 7) == P{3, 4});
  CHECK(data::truncated_lengths(6, 6, 8) == P{4, 4});
  CHECK(data::truncated_lengths(2, 20, 6) == P{2, 4});
  CHECK(data::truncated_lengths(20, 2, 6) == P{4, 2});
  CHECK(data::truncated_lengths(9, 9, 5) == P{2, 3});
  CHECK(data::truncated_lengths(1, 9, 3) == P{1, 2});
  CHECK(data::truncated_lengths(5, 4, 4) == P{2, 2});
  CHECK(data::truncated_lengths(2, 2, 4) == P{2, 2});
  CHECK(data::truncated_lengths(10, std::nullopt, 4) == P{4, 0});
}

TEST_CASE("post-processors: type ids as tokenizers assigns them", "[data][labelled]") {
  const std::string name = "tokenizer.json";
  auto parse = [&](const std::string& json) {
    return tokenizer::hf::parse_post_processor(tokenizer::hf::Json::parse(json),
                                          tokenizer::hf::Where{&name, "post_processor"}, 10);
  };
  const Ids a{7, 8}, b{9};
  auto typed = [&](const tokenizer::hf::PostProcessor* p, bool pair) {
    return tokenizer::hf::post_process(p, a, pair ? &b : nullptr);
  };
  auto bert = parse(R"({"type": "BertProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2]})");
  CHECK(typed(bert.get(), true).ids == Ids{2, 7, 8, 3, 9, 3});
  CHECK(typed(bert.get(), true).type_ids == Ids{0, 0, 0, 0, 1, 1});
  auto roberta = parse(R"({"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0]})");
  CHECK(typed(roberta.get(), true).type_ids == Ids(7, 0));
  CHECK(typed(nullptr, true).ids == Ids{7, 8, 9});  // no post-processor: joined, segments 0 and 1
  CHECK(typed(nullptr, true).type_ids == Ids{0, 0, 1});
  // tokenizers 0.23: Sequence([ByteLevel, Template]) applies the pair template (ByteLevel keeps
  // the pair apart), with the template's type ids.
  auto seq = parse(
      R"({"type": "Sequence", "processors": [{"type": "ByteLevel"}, {"type": "TemplateProcessing",
      "single": [{"SpecialToken": {"id": "<s>", "type_id": 1}}, {"Sequence": {"id": "A", "type_id": 0}}],
      "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
               {"SpecialToken": {"id": "<s>", "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
      "special_tokens": {"<s>": {"id": "<s>", "ids": [5], "tokens": ["<s>"]}}}]})");
  CHECK(typed(seq.get(), true).ids == Ids{5, 7, 8, 5, 9});
  CHECK(typed(seq.get(), true).type_ids == Ids{0, 0, 0, 1, 1});
  CHECK(typed(seq.get(), false).type_ids == Ids{1, 0, 0});
}

TEST_CASE("classification: BERT encodings equal tokenizers' ids and type ids", "[data][labelled]") {
  const auto tok = test::bert_tokenizer();
  auto e = encode(*tok, "The cat sat on the mat.", "", 64);
  CHECK(e.input_ids == Ids{2, 333, 45, 331, 402, 224, 352, 333, 462, 224, 18, 3});
  CHECK(e.token_type_ids == Ids(12, 0));
  e = encode(*tok, "The cat sat on the mat.", "A dog barked.", 64);
  CHECK(e.input_ids == Ids{2, 333, 45,  331, 402, 224, 352, 333, 462, 224, 18,
                           3, 43,  460, 237, 44,  344, 680, 233, 18,  3});
  CHECK(e.token_type_ids == Ids{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1});
  e = encode(*tok, "The cat sat on the mat.", "A dog barked loudly at the mailman.", 12);
  CHECK(e.input_ids == Ids{2, 333, 45, 331, 402, 3, 43, 460, 237, 44, 344, 3});
  CHECK(e.token_type_ids == Ids{0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1});
  CHECK(encode(*tok, "Hello world", "", 4).input_ids == Ids{2, 50, 353, 3});
  e = encode(*tok, "one two three four five six", "seven", 7);
  CHECK(e.input_ids == Ids{2, 437, 62, 3, 545, 465, 3});
  CHECK(e.token_type_ids == Ids{0, 0, 0, 0, 1, 1, 1});
  CHECK_THROWS_AS(encode(*tok, "a", "b", 4), util::ConfigError);  // 3 specials + 2 texts > 4
}

TEST_CASE("classification: the collator pads right with masks and type ids", "[data][labelled]") {
  const std::vector<data::EncodedExample> batch{{{2, 10, 11, 3}, {0, 0, 0, 0}, 1, {}},
                                                {{2, 12, 3, 13, 3}, {0, 0, 0, 1, 1}, 0, {}}};
  auto b = data::collate_classification(batch, /*pad_id=*/0);
  CHECK(b.batch_size == 2);
  CHECK(b.seq_len == 5);
  CHECK(b.input_ids == std::vector<int64_t>{2, 10, 11, 3, 0, 2, 12, 3, 13, 3});
  CHECK(b.attention_mask == std::vector<int64_t>{1, 1, 1, 1, 0, 1, 1, 1, 1, 1});
  CHECK(b.token_type_ids == std::vector<int64_t>{0, 0, 0, 0, 0, 0, 0, 0, 1, 1});
  CHECK(b.labels == std::vector<int64_t>{1, 0});
  b = data::collate_classification(batch, /*pad_id=*/7, /*pad_to_multiple_of=*/4);
  CHECK(b.seq_len == 8);
  CHECK(b.input_ids[4] == 7);
  CHECK(b.input_ids[15] == 7);
  CHECK(b.attention_mask[13] == 0);
  // A loader's rows, picked by index and in that order (repeats allowed).
  const std::vector<uint64_t> rows{1, 0, 1};
  b = data::collate_classification(batch, rows, /*pad_id=*/0);
  CHECK(b.batch_size == 3);
  CHECK(b.seq_len == 5);
  CHECK(b.input_ids == std::vector<int64_t>{2, 12, 3, 13, 3, 2, 10, 11, 3, 0, 2, 12, 3, 13, 3});
  CHECK(b.labels == std::vector<int64_t>{0, 1, 0});
}
