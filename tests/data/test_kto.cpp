// KTO's unpaired data (data/kto.h): the records of both forms and paired lines unpaired, the errors
// that name the line and field, and the collated rows with their KL rows (each prompt with the
// previous example's completion), cut at seq_len.
#include "../torch_catch.h"  // first: see the file

#include <fstream>

#include "data/kto.h"
#include "helpers.h"
#include "tokenizer/byte_tokenizer.h"
#include "util/error.h"

using namespace hftrain;
using Catch::Matchers::Contains;

namespace {

std::vector<data::KtoRecord> read_kto(const std::filesystem::path& file) { return data::read_kto(file, {}); }

std::vector<data::KtoRecord> read(const std::string& jsonl) { return test::read_jsonl("kto.jsonl", jsonl, read_kto); }

std::string error(const std::string& jsonl) { return test::jsonl_error("kto.jsonl", jsonl, read_kto); }

}  // namespace

TEST_CASE("kto: unpaired records of both forms, and a paired line as two", "[data][preference][kto]") {
  const auto records = read(R"({"prompt": "Q: ", "completion": "yes", "label": true}
{"prompt": [{"role": "user", "content": "hi"}], "completion": [{"role": "assistant", "content": "go"}], "label": false}
{"prompt": "Q: ", "chosen": "good", "rejected": "bad"}
)");
  REQUIRE(records.size() == 4);
  CHECK(records[0].desirable);
  CHECK(records[0].record.prompt == "Q: ");
  CHECK(records[0].record.chosen == "yes");
  CHECK_FALSE(records[1].desirable);
  CHECK(records[1].record.conversational);
  CHECK(records[1].record.chosen_messages[0]["content"] == "go");
  CHECK(records[2].desirable);
  CHECK(records[2].record.chosen == "good");
  CHECK_FALSE(records[3].desirable);
  CHECK(records[3].record.chosen == "bad");
  CHECK_THAT(records[3].record.origin, Contains("kto.jsonl:3"));
}

TEST_CASE("kto: bad records name the line and the field", "[data][preference][kto]") {
  CHECK_THAT(error(R"({"prompt": "q", "completion": "a", "lable": true})"),
             Contains("kto.jsonl:1: the record has no field 'label'") && Contains("did you mean 'lable'"));
  CHECK_THAT(error(R"({"prompt": "q", "completion": "a", "label": 1})"),
             Contains("kto.jsonl:1: field 'label' is 1, not true or false"));
  CHECK_THAT(error(R"({"prompt": "q", "completion": "", "label": true})"),
             Contains("kto.jsonl:1: field 'completion' is empty"));
  CHECK_THAT(error(R"({"prompt": [], "completion": "a", "label": true})"),
             Contains("field 'prompt' is a list of messages, but field 'completion' is a string"));
  CHECK_THAT(error(R"({"prompt": "q", "completion": 3, "label": true})"),
             Contains("field 'completion' is a JSON number"));
  CHECK_THAT(error("\n\n"), Contains("holds no records"));
}

TEST_CASE("kto: B examples collate into B rows and B KL rows, cut at seq_len", "[data][preference][kto]") {
  std::vector<data::KtoExample> examples(3);
  examples[0] = {{1, 2}, {3}, true, false};
  examples[1] = {{4}, {5, 6}, false, false};
  examples[2] = {{7}, {8, 9, 10}, true, false};
  const std::vector<uint64_t> ids{0, 1, 2};
  const data::HostBatch b = data::collate_kto(examples, ids, /*pad_id=*/0, /*seq_len=*/3);
  CHECK(b.batch_size == 6);
  CHECK(b.seq_len == 3);
  const int64_t I = data::kIgnoreIndex;
  // Rows: the examples, then prompt i with completion i - 1 (mod 3), each cut at 3 tokens.
  CHECK(b.input_ids == std::vector<int64_t>{1, 2, 3, /**/ 4, 5, 6, /**/ 7, 8, 9,  //
                                            1, 2, 8, /**/ 4, 3, 0, /**/ 7, 5, 6});
  CHECK(b.labels == std::vector<int64_t>{I, 3, I, /**/ 5, 6, I, /**/ 8, 9, I,  //
                                         I, 8, I, /**/ 3, I, I, /**/ 5, 6, I});
  CHECK(b.attention_mask == std::vector<int64_t>{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1});
  CHECK(b.desirable == std::vector<uint8_t>{1, 0, 1});
  CHECK(b.num_target_tokens == 3);
  CHECK(b.rows_per_sample == 2);
}

TEST_CASE("kto: an example encodes as a preference answer does, its label kept", "[data][preference][kto]") {
  const tokenizer::ByteTokenizer tok;
  data::KtoRecord r;
  r.record.prompt = "Q:";
  r.record.chosen = r.record.rejected = " no";
  r.desirable = false;
  const auto e = data::encode_kto(tok, nullptr, r, {64, 0, false});
  REQUIRE(e);
  CHECK(e->prompt == std::vector<int32_t>{'Q', ':'});
  CHECK(e->completion == std::vector<int32_t>{' ', 'n', 'o', tok.eot_id()});
  CHECK_FALSE(e->desirable);
  CHECK_FALSE(data::encode_kto(tok, nullptr, r, {2, 0, false}));  // the prompt fills the sequence
}
