// Preference pairs (data/preference.h): both of TRL's forms read with every bad record named by
// file:line and field; TRL's implicit prompt; the encoding (prompt, prompt + answer, the answer what
// follows the prompt's ids, EOS appended to text answers, the chat template's generation prompt);
// the limits (the prompt's end kept, each sequence's start kept, a prompt that fills the row
// dropped); the collator's 2B rows with labels on the answers only.
#include <catch2/catch.hpp>

#include <fstream>

#include "../config/helpers.h"
#include "data/preference.h"
#include "helpers.h"
#include "tokenizer/byte_tokenizer.h"
#include "util/error.h"

using namespace hftrain;
using Catch::Matchers::Contains;
using Ids = std::vector<int32_t>;

namespace {

std::vector<data::PreferenceRecord> read_pairs(const std::filesystem::path& file) {
  return data::read_preference(file, {});
}

std::vector<data::PreferenceRecord> read(const std::string& jsonl) {
  return test::read_jsonl("pairs.jsonl", jsonl, read_pairs);
}

// The message and hint of the DataError reading `jsonl` throws.
std::string error(const std::string& jsonl) { return test::jsonl_error("pairs.jsonl", jsonl, read_pairs); }

Ids bytes(const std::string& text) {
  return Ids(text.begin(), text.end());
}

}  // namespace

TEST_CASE("preference: the text and the conversational form, with and without a prompt", "[data][preference]") {
  const auto records = read(R"({"prompt": "Q: 2+2?", "chosen": " 4", "rejected": " 5"}

{"chosen": "The sky is blue.", "rejected": "The sky is green."}
{"prompt": [{"role": "user", "content": "hi"}], "chosen": [{"role": "assistant", "content": "hello"}], )"
                            R"("rejected": [{"role": "assistant", "content": "go away"}]}
{"chosen": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}], )"
                            R"("rejected": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "no"}]}
)");
  REQUIRE(records.size() == 4);
  CHECK(records[0].prompt == "Q: 2+2?");
  CHECK(records[0].chosen == " 4");
  CHECK_THAT(records[0].origin, Contains("pairs.jsonl:1"));
  // TRL's implicit prompt: the shared start, the space before the difference going to the answers.
  CHECK(records[1].prompt == "The sky is");
  CHECK(records[1].chosen == " blue.");
  CHECK(records[1].rejected == " green.");
  CHECK_THAT(records[1].origin, Contains("pairs.jsonl:3"));  // blank lines still count
  CHECK(records[2].conversational);
  CHECK(records[2].prompt_messages.size() == 1);
  CHECK(records[2].rejected_messages[0]["content"] == "go away");
  // Messages: the ones both answers start with become the prompt.
  CHECK(records[3].prompt_messages.size() == 1);
  CHECK(records[3].prompt_messages[0]["content"] == "hi");
  CHECK(records[3].chosen_messages.size() == 1);
  CHECK(records[3].chosen_messages[0]["content"] == "hello");
}

TEST_CASE("preference: every bad record is named by line and field", "[data][preference]") {
  CHECK_THAT(error(R"({"prompt": "q", "chosen": "a", "rejectd": "b"})"),
             Contains("pairs.jsonl:1") && Contains("no field 'rejected'") && Contains("did you mean 'rejectd'"));
  CHECK_THAT(error("{\"chosen\": \"a\", \"rejected\": \"b\"}\n{\"chosen\": 1, \"rejected\": \"b\"}"),
             Contains("pairs.jsonl:2") && Contains("field 'chosen' is a JSON number"));
  CHECK_THAT(error(R"({"chosen": "a", "rejected": [{"role": "assistant", "content": "b"}]})"),
             Contains("field 'rejected' is a list of messages, but field 'chosen' is a string"));
  CHECK_THAT(error(R"({"prompt": "q", "chosen": "same", "rejected": "same"})"), Contains("the same"));
  CHECK_THAT(error(R"({"chosen": "abc", "rejected": "abcd"})"), Contains("an empty answer"));
  CHECK_THAT(error(R"({"prompt": "q", "chosen": "", "rejected": "b"})"), Contains("an empty answer"));
  CHECK_THAT(error(R"({"chosen": [{"role": "assistant"}], "rejected": [{"role": "assistant", "content": "b"}]})"),
             Contains("field 'chosen' message 0 has no string 'content'"));
  CHECK_THAT(error(R"({"chosen": "a", "rejected": )"), Contains("pairs.jsonl:1") && Contains("malformed JSON"));
  CHECK_THAT(error("[1, 2]"), Contains("not an object"));
  CHECK_THAT(error("\n\n"), Contains("holds no records"));
}

TEST_CASE("preference: pairs encode as TRL encodes them, and are cut to the limits", "[data][preference]") {
  const tokenizer::ByteTokenizer tok;
  const int32_t eos = tok.eot_id();
  data::PreferenceRecord r;
  r.prompt = "ab";
  r.chosen = "cd";
  r.rejected = "x";
  auto pair = data::encode_pair(tok, nullptr, r, {16, 0});
  REQUIRE(pair);
  CHECK(pair->prompt == bytes("ab"));
  CHECK(pair->chosen == Ids{'c', 'd', eos});
  CHECK(pair->rejected == Ids{'x', eos});
  CHECK_FALSE(pair->truncated);
  // seq_len keeps each sequence's start: the chosen answer loses its end.
  pair = data::encode_pair(tok, nullptr, r, {4, 0});
  REQUIRE(pair);
  CHECK(pair->chosen == Ids{'c', 'd'});
  CHECK(pair->rejected == Ids{'x', eos});
  CHECK(pair->truncated);
  // max_prompt_len keeps the prompt's end; a prompt that fills the row drops the record.
  pair = data::encode_pair(tok, nullptr, r, {16, 1});
  REQUIRE(pair);
  CHECK(pair->prompt == bytes("b"));
  CHECK(pair->truncated);
  CHECK_FALSE(data::encode_pair(tok, nullptr, r, {2, 0}));

  // The conversational form through a template: the prompt with the generation prompt, the answer
  // what follows it in the whole conversation (its end of turn included).
  const tokenizer::ChatTemplate chat(
      "{% for m in messages %}<{{ m.role }}>{{ m.content }}\n{% endfor %}"
      "{% if add_generation_prompt %}<assistant>{% endif %}",
      "test template", nlohmann::ordered_json::object());
  data::PreferenceRecord c;
  c.conversational = true;
  c.prompt_messages = nlohmann::ordered_json::parse(R"([{"role": "user", "content": "hi"}])");
  c.chosen_messages = nlohmann::ordered_json::parse(R"([{"role": "assistant", "content": "yes"}])");
  c.rejected_messages = nlohmann::ordered_json::parse(R"([{"role": "assistant", "content": "no"}])");
  c.origin = "pairs.jsonl:7";
  pair = data::encode_pair(tok, &chat, c, {64, 0});
  REQUIRE(pair);
  CHECK(pair->prompt == bytes("<user>hi\n<assistant>"));
  CHECK(pair->chosen == bytes("yes\n"));
  CHECK(pair->rejected == bytes("no\n"));
  CHECK_THAT(test::data_error([&] {
               data::encode_pair(tok, nullptr, c, {64, 0});
             }),
             Contains("pairs.jsonl:7") && Contains("chat template"));
}

TEST_CASE("preference: B pairs collate into 2B rows, chosen first, labels on the answers", "[data][preference]") {
  const int32_t pad = 9;
  std::vector<data::EncodedPair> pairs(2);
  pairs[0] = {{1, 2}, {3, 4}, {5}, false, {}, {}};
  pairs[1] = {{6}, {7}, {8, 10, 11}, false, {}, {}};
  const std::vector<uint64_t> ids{1, 0};
  const data::HostBatch b = data::collate_pairs(pairs, ids, pad, 2);
  CHECK(b.batch_size == 4);
  CHECK(b.seq_len == 4);  // the longest row (3 or 4 tokens) rounded up to 2
  const int64_t I = data::kIgnoreIndex;
  CHECK(b.input_ids == std::vector<int64_t>{6, 7, 9, 9, /**/ 1, 2, 3, 4, /**/ 6, 8, 10, 11, /**/ 1, 2, 5, 9});
  CHECK(b.labels == std::vector<int64_t>{7, I, I, I, /**/ I, 3, 4, I, /**/ 8, 10, 11, I, /**/ I, 5, I, I});
  CHECK(b.attention_mask == std::vector<int64_t>{1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0});
  CHECK(b.num_target_tokens == 2);  // pairs
  CHECK(b.rows_per_sample == 2);
  CHECK(b.sample_ids == ids);
  CHECK(b.margins.empty());  // no pair has a margin
  pairs[0].margin = 1.5F;    // one has: the other's is 0
  CHECK(data::collate_pairs(pairs, ids, pad, 2).margins == std::vector<float>{0.0F, 1.5F});
  // Precomputed reference log-probs ride along per row: the chosen rows', then the rejected rows'.
  pairs[0].reference_logps = {{-1.0F, -2.0F}};
  pairs[1].reference_logps = {{-3.0F, -4.0F}};
  CHECK(data::collate_pairs(pairs, ids, pad, 2).reference_logps == std::vector<float>{-3.0F, -1.0F, -4.0F, -2.0F});
}

TEST_CASE("preference: a reward model's limits drop a pair whose sequence is too long, and keep its margin",
          "[data][preference]") {
  const tokenizer::ByteTokenizer tok;
  data::PreferenceRecord r;
  r.prompt = "Q: ";
  r.chosen = "yes";
  r.rejected = "no, not at all";
  r.margin = 0.5;
  const auto whole = data::encode_pair(tok, nullptr, r, {64, 0, true});
  REQUIRE(whole);
  CHECK(whole->margin == 0.5F);
  CHECK_FALSE(whole->truncated);
  // 3 + 14 + EOS = 18 tokens: cut at 10 without drop_long, dropped with it.
  CHECK(data::encode_pair(tok, nullptr, r, {10, 0, false})->truncated);
  CHECK_FALSE(data::encode_pair(tok, nullptr, r, {10, 0, true}));
  CHECK(data::encode_pair(tok, nullptr, r, {18, 0, true}));
}
