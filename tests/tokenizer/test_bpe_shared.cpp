// What the two BPE tokenizers share: the reader of a tokenizer.json's vocabulary and merges (both
// accept and refuse the same files, with the same messages), the merge loop (both give the same
// ids, as `tokenizers` does, also on long runs of one character), and the check of the
// post-processor's special token ids.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <random>

#include "tokenizer/bpe_merges.h"
#include "tokenizer/bpe_trainer.h"
#include "tokenizer/hf/hf_tokenizer.h"
#include "tokenizer/tokenizer_json.h"
#include "helpers.h"

using namespace hftrain;
using namespace hftrain::tokenizer;
using Ids = std::vector<int32_t>;

namespace {

// A byte-level BPE tokenizer.json (BpeTokenizer loads it) with `model` patched into its model.
hf::Json byte_level_doc(const hf::Json& model) {
  hf::Json doc = hf::Json::parse(R"({"version": "1.0", "normalizer": null,
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
    "decoder": {"type": "ByteLevel"}, "post_processor": null,
    "added_tokens": [{"id": 9, "content": "<|endoftext|>", "special": true, "normalized": false}],
    "model": {"type": "BPE", "dropout": null, "unk_token": null, "byte_fallback": false,
              "vocab": {"a": 0, "b": 1, "c": 2, "Ġ": 3, "ab": 4, "bc": 5, "abc": 6, "<|endoftext|>": 9},
              "merges": [["a", "b"], ["b", "c"], ["ab", "c"]]}})");
  for (const auto& [key, value] : model.items()) doc["model"][key] = value;
  return doc;
}

// The same file through HfTokenizer: an empty normalizer sequence changes nothing but the class.
hf::Json general_doc(hf::Json doc) {
  doc["normalizer"] = hf::Json{{"type", "Sequence"}, {"normalizers", hf::Json::array()}};
  return doc;
}

// Both tokenizers of `doc`, or the messages they refuse it with.
struct Both {
  std::unique_ptr<Tokenizer> fast, general;
  std::string fast_error, general_error;
};

Both load_both(const hf::Json& doc) {
  Both b;
  try {
    b.fast = parse_tokenizer_json(doc.dump(), "t.json");
    REQUIRE(dynamic_cast<const BpeTokenizer*>(b.fast.get()));
  } catch (const util::DataError& e) {
    b.fast_error = e.what();
  }
  try {
    b.general = parse_tokenizer_json(general_doc(doc).dump(), "t.json");
    REQUIRE(dynamic_cast<const HfTokenizer*>(b.general.get()));
  } catch (const util::DataError& e) {
    b.general_error = e.what();
  }
  return b;
}

// The merge loop as a specification: the lowest-rank pair, leftmost on ties, until none is left.
// Quadratic, and so only for short words.
Ids reference_merge(
    Ids symbols, const std::map<std::pair<int32_t, int32_t>, std::pair<int32_t, int32_t>>& ranks) {
  while (symbols.size() > 1) {
    size_t best = 0;
    int32_t best_rank = -1;
    for (size_t i = 0; i + 1 < symbols.size(); ++i) {
      auto it = ranks.find({symbols[i], symbols[i + 1]});
      if (it != ranks.end() && (best_rank < 0 || it->second.first < best_rank)) {
        best = i;
        best_rank = it->second.first;
      }
    }
    if (best_rank < 0) break;
    symbols[best] = ranks.at({symbols[best], symbols[best + 1]}).second;
    symbols.erase(symbols.begin() + static_cast<std::ptrdiff_t>(best) + 1);
  }
  return symbols;
}

}  // namespace

TEST_CASE("BPE merges: lowest rank first, leftmost on ties, a repeated pair at its last rank",
          "[data][bpe]") {
  // Tokens: 0 a, 1 b, 2 c, 3 ab, 4 bc, 5 aa.
  auto apply = [](const std::vector<BpeMerge>& merges, Ids word) {
    BpeMerges(merges).apply(word);
    return word;
  };
  CHECK(apply({{1, 2, 4}, {0, 1, 3}}, {0, 1, 2}) == Ids{0, 4});
  CHECK(apply({{0, 1, 3}, {1, 2, 4}}, {0, 1, 2}) == Ids{3, 2});
  CHECK(apply({{0, 0, 5}}, {0, 0, 0}) == Ids{5, 0});
  // `tokenizers` gives "abc" [ab, c] for the merges (b c), (a b), (b c): the last rank counts.
  CHECK(apply({{1, 2, 4}, {0, 1, 3}, {1, 2, 4}}, {0, 1, 2}) == Ids{3, 2});
  CHECK(BpeMerges({{1, 2, 4}, {0, 1, 3}, {1, 2, 4}}).size() == 2);
  CHECK(apply({}, {0, 1}) == Ids{0, 1});
  CHECK(apply({{0, 1, 3}}, {}).empty());
}

TEST_CASE("BPE merges: the heap gives what merging the best pair one at a time gives",
          "[data][bpe]") {
  std::mt19937 rng(1234);
  for (int round = 0; round < 50; ++round) {
    // Random merges over a three-letter alphabet; different pairs may spell the same token, and
    // pairs may repeat, as in trained and in downloaded files.
    std::vector<std::string> tokens{"a", "b", "c"};
    std::vector<BpeMerge> merges;
    std::map<std::pair<int32_t, int32_t>, std::pair<int32_t, int32_t>> ranks;
    for (int i = 0; i < 40; ++i) {
      const auto left = static_cast<int32_t>(rng() % tokens.size());
      const auto right = static_cast<int32_t>(rng() % tokens.size());
      const std::string text =
          tokens[static_cast<size_t>(left)] + tokens[static_cast<size_t>(right)];
      auto found = std::find(tokens.begin(), tokens.end(), text);
      const auto merged = static_cast<int32_t>(found - tokens.begin());
      if (found == tokens.end()) tokens.push_back(text);
      ranks[{left, right}] = {static_cast<int32_t>(merges.size()), merged};
      merges.push_back({left, right, merged});
    }
    const BpeMerges heap(merges);
    for (int w = 0; w < 40; ++w) {
      Ids word(1 + rng() % 40);
      for (auto& id : word) id = static_cast<int32_t>(rng() % 3);
      Ids merged = word;
      heap.apply(merged);
      INFO("round " << round << ", word " << w);
      CHECK(merged == reference_merge(word, ranks));
    }
  }
}

TEST_CASE("BPE files: both tokenizers accept and refuse the same vocabularies and merges",
          "[data][bpe]") {
  // `model`: the keys to replace in byte_level_doc's model, as JSON.
  auto same_ids = [](const std::string& model, const Ids& expected) {
    const Both b = load_both(byte_level_doc(hf::Json::parse(model)));
    INFO(model << ": " << b.fast_error);
    REQUIRE(b.fast_error.empty());
    REQUIRE(b.general_error.empty());
    CHECK(b.fast->encode("abc ab") == expected);
    CHECK(b.general->encode("abc ab") == expected);
    CHECK(b.fast->vocab_size() == b.general->vocab_size());
  };
  auto same_error = [](const std::string& model, const std::string& message) {
    const Both b = load_both(byte_level_doc(hf::Json::parse(model)));
    INFO(model);
    CHECK_THAT(b.fast_error, Catch::Contains(message));
    CHECK(b.general_error == b.fast_error);
  };
  same_ids("{}", Ids{6, 3, 4});  // "Ġab": the space has no merge with "a"
  same_ids(R"({"merges": ["a b", "b c", "ab c"]})", Ids{6, 3, 4});  // the older "a b" form
  same_ids(R"({"merges": []})", Ids{0, 1, 2, 3, 0, 1});
  // Ids with gaps: the vocabulary's size is the largest id + 1; a gap decodes to nothing.
  same_ids(
      R"({"vocab": {"a": 0, "b": 1, "c": 2, "Ġ": 3, "ab": 40, "bc": 5, "abc": 6, "<|endoftext|>": 9}})",
      Ids{6, 3, 40});
  // A repeated merge keeps its last rank, as in `tokenizers`: (b c) now comes after (a b).
  same_ids(R"({"merges": [["b", "c"], ["a", "b"], ["ab", "c"], ["b", "c"]]})", Ids{6, 3, 4});
  same_ids(R"({"merges": [["b", "c"], ["a", "b"]]})", Ids{0, 5, 3, 4});
  // An added token the vocabulary lacks gets the next id, whatever the file says, as in
  // `tokenizers` (which gives "abc<|endoftext|>" [6, 7] here).
  hf::Json added = byte_level_doc(hf::Json::parse(
      R"({"vocab": {"a": 0, "b": 1, "c": 2, "Ġ": 3, "ab": 4, "bc": 5, "abc": 6}})"));
  added["added_tokens"][0]["id"] = 50;
  const Both renumbered = load_both(added);
  REQUIRE(renumbered.fast);
  REQUIRE(renumbered.general);
  CHECK(renumbered.fast->encode("abc<|endoftext|>", true) == Ids{6, 7});
  CHECK(renumbered.general->encode("abc<|endoftext|>", true) == Ids{6, 7});
  CHECK(renumbered.fast->vocab_size() == 8);
  CHECK(renumbered.general->vocab_size() == 8);

  // With a gap in the vocabulary that next id can be a model token's ("abc" at 7 here): as in
  // `tokenizers`, both texts then give 7, and such a file stays as it was read when written back.
  hf::Json shared = byte_level_doc(hf::Json::parse(
      R"({"vocab": {"a": 0, "b": 1, "c": 2, "Ġ": 3, "ab": 4, "bc": 5, "abc": 7}})"));
  shared["added_tokens"][0]["id"] = 50;
  const auto collided = parse_tokenizer_json(shared.dump(), "t.json");
  CHECK(collided->encode("abc<|endoftext|> abc", true) == Ids{7, 7, 3, 7});
  const auto again = parse_tokenizer_json(tokenizer_json_text(*collided), "again.json");
  CHECK(again->encode("abc<|endoftext|> abc", true) == Ids{7, 7, 3, 7});

  same_error(R"({"merges": ["a b c"]})",
             "t.json: model.merges[0] is 'a b c', not two tokens separated by one space");
  same_error(R"({"merges": ["ab"]})", "t.json: model.merges[0] is 'ab', not two tokens");
  same_error(R"({"merges": [["a", "b", "c"]]})",
             "model.merges[0] is neither \"left right\" nor [\"left\", \"right\"]");
  same_error(R"({"merges": [["a", 1]]})", "model.merges[0][1] is an integer, not a string");
  same_error(R"({"merges": "a b"})", "t.json: model.merges is not an array");
  same_error(R"({"merges": [["a", "x"]]})",
             "model.merges[0] merges 'a' and 'x', but 'x' is not in model.vocab");
  same_error(R"({"merges": [["c", "a"]]})",
             "model.merges[0] merges 'c' and 'a', but the result is not in model.vocab");
  same_error(R"({"vocab": {"a": 0, "b": 0}, "merges": []})",
             "model.vocab gives id 0 to both 'a' and 'b'");
  same_error(R"({"vocab": {"a": -1}, "merges": []})", "model.vocab.'a' is -1, outside [0, ");
  same_error(R"({"vocab": {"a": 99999999999}, "merges": []})",
             "model.vocab.'a' is 99999999999, above ");
  same_error(R"({"vocab": {"a": 5000000}, "merges": []})", "model.vocab.'a' is 5000000, above ");
  same_error(R"({"vocab": {"a": "0"}, "merges": []})",
             "model.vocab.'a' is a string, not an integer");
  same_error(R"({"vocab": [1, 2]})", "t.json: model.vocab is an array, not an object");
}

TEST_CASE("BPE files: a post-processor id outside the vocabulary is refused by both tokenizers",
          "[data][bpe]") {
  hf::Json doc = byte_level_doc(hf::Json::object());
  doc["post_processor"] = hf::Json::parse(R"({"type": "TemplateProcessing",
      "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
      "pair": [], "special_tokens": {"<s>": {"id": "<s>", "ids": [10], "tokens": ["<s>"]}}})");
  const Both b = load_both(doc);
  CHECK_THAT(b.fast_error, Catch::Contains("t.json: post_processor.special_tokens.'<s>'.ids[0] is "
                                           "token id 10, outside the vocabulary (ids 0 to 9)"));
  CHECK(b.general_error == b.fast_error);
  doc["post_processor"]["special_tokens"]["<s>"]["ids"] = {9};  // the largest id is fine
  const Both ok = load_both(doc);
  CHECK(ok.fast_error.empty());
  CHECK(ok.general_error.empty());
}

TEST_CASE("BPE: the byte-level and the general tokenizer give identical ids on varied text",
          "[data][bpe]") {
  BpeTrainer trainer({.vocab_size = 700, .min_frequency = 2});
  for (int i = 0; i < 3; ++i) {
    for (const auto& text : test::kMultilingual) trainer.add_text(text);
  }
  trainer.add_text(std::string(400, '=') + " " + std::string(300, 'a') + " abababab 0000000");
  const BpeTokenizer fast = trainer.train();
  auto general = parse_tokenizer_json(
      general_doc(hf::Json::parse(tokenizer_json_text(fast))).dump(), "general.json");
  REQUIRE(dynamic_cast<const HfTokenizer*>(general.get()));
  std::vector<std::string> texts = test::kMultilingual;
  // Long words of one repeated character or pattern: one piece each, longer than the piece cache
  // keeps, where rescanning the word after every merge took quadratic time.
  auto repeated = [](const std::string& unit, size_t bytes) {
    std::string word;
    while (word.size() < bytes) word += unit;
    return word;
  };
  for (const char* unit : {"a", "=", "ab", "0", "é", "日", "🚀", "aab"}) {
    texts.push_back(repeated(unit, 60000));
    texts.push_back("x " + repeated(unit, 20000) + "\n" + repeated(unit, 1001) + "<|endoftext|>");
  }
  for (const auto& text : texts) {
    INFO(text.substr(0, 80));
    const Ids ids = fast.encode(text, true);
    CHECK(general->encode(text, true) == ids);
    CHECK(general->encode(text, false) == fast.encode(text, false));
    CHECK(fast.decode(ids) == text);
    CHECK(general->decode(ids) == text);
  }
  CHECK(general->eot_id() == fast.eot_id());
  CHECK(general->pad_id() == fast.pad_id());
}

TEST_CASE("BPE files: a Split regex that backtracks without end is named by file and JSON path in both tokenizers",
          "[data][bpe]") {
  // (a+)+$ on a run of a's that ends in b: exponential backtracking, stopped by PCRE2's match limit.
  hf::Json doc = byte_level_doc(hf::Json::object());
  doc["pre_tokenizer"] = hf::Json::parse(R"({"type": "Sequence", "pretokenizers": [
      {"type": "Split", "pattern": {"Regex": "(a+)+$"}, "behavior": "Isolated", "invert": false},
      {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}]})");
  const Both b = load_both(doc);
  REQUIRE(b.fast);
  REQUIRE(b.general);
  const std::string text = std::string(40, 'a') + "b";
  for (const Tokenizer* t : {b.fast.get(), b.general.get()}) {
    CHECK_THAT(test::data_error([&] { t->encode(text); }),
               Catch::Contains("t.json: pre_tokenizer.pretokenizers[0]") &&
                   Catch::Contains("splitting text with the regex failed"));
  }
}
