// Tokenizing text files on several threads: the corpus (ids, loss flags, document starts) is the
// same as on one thread, across many batches, and the first bad line of a file is reported the
// same way.
#include <catch2/catch.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "data/tokenize_documents.h"
#include "helpers.h"
#include "tokenizer/bpe_trainer.h"
#include "tokenizer/byte_tokenizer.h"

using namespace hftrain;
using data::SourceSpec;
namespace fs = std::filesystem;

namespace {

using Files = std::vector<std::pair<SourceSpec, fs::path>>;

struct Flat {
  std::vector<uint32_t> tokens;
  std::vector<bool> train;
  std::vector<uint64_t> starts;
  bool operator==(const Flat&) const = default;
};

Flat flat(const data::TokenCorpus& c) {
  Flat f;
  for (uint64_t i = 0; i < c.num_tokens(); ++i) {
    f.tokens.push_back(c.token(i));
    f.train.push_back(c.trains(i));
  }
  f.starts.assign(c.doc_starts().begin(), c.doc_starts().end());
  return f;
}

// Documents of varied length and script; long enough in total to fill several batches (1 MB or
// 512 documents each).
std::string document(int i) {
  std::string text = "document " + std::to_string(i) + ": ";
  const auto& words = test::kMultilingual;
  for (int j = 0; j < 1 + (i * 7919) % 97; ++j) text += words[static_cast<size_t>(i + j) % words.size()] + " ";
  return text;
}

std::string escaped(const std::string& s) {
  const std::string quoted = nlohmann::json(s).dump();
  return quoted.substr(1, quoted.size() - 2);
}

}  // namespace

TEST_CASE("tokenize_files: any thread count gives the one-thread corpus", "[data][tokenize]") {
  test::TempDir dir;
  std::string text_jsonl;
  std::string chat_jsonl;
  for (int i = 0; i < 3000; ++i) text_jsonl += "{\"text\": \"" + escaped(document(i)) + "\"}\n";
  for (int i = 0; i < 700; ++i) {
    chat_jsonl +=
        "{\"prompt\": \"" + escaped(document(i)) + "\", \"response\": \"" + escaped(document(i + 1)) + "\"}\n";
  }
  auto a = dir.write("a.jsonl", text_jsonl);
  auto b = dir.write("b.jsonl", chat_jsonl);
  Files files{{SourceSpec{.path = a.string()}, a},
              {SourceSpec{.path = b.string(), .format = data::SourceFormat::kChat}, b}};

  tokenizer::BpeTrainer trainer({.vocab_size = 600, .min_frequency = 2});
  for (int i = 0; i < 200; ++i) trainer.add_text(document(i));
  const tokenizer::BpeTokenizer bpe = trainer.train();
  const tokenizer::ByteTokenizer bytes;
  for (const tokenizer::Tokenizer* tok : {static_cast<const tokenizer::Tokenizer*>(&bpe),
                                          static_cast<const tokenizer::Tokenizer*>(&bytes)}) {
    data::TokenizeStats one;
    const Flat expected = flat(*data::tokenize_files(files, {}, *tok, 1, &one));
    CHECK(one.threads == 1);
    CHECK(expected.starts.size() == 3701);
    CHECK(std::count(expected.train.begin(), expected.train.end(), false) > 0);  // the prompts
    for (int threads : {2, 3, 8}) {
      data::TokenizeStats stats;
      CHECK(flat(*data::tokenize_files(files, {}, *tok, threads, &stats)) == expected);
      CHECK(stats.threads == threads);
      CHECK(stats.text_bytes == one.text_bytes);
      CHECK(stats.text_bytes > (uint64_t{1} << 20));  // more than one batch of text
    }
  }
}

TEST_CASE("tokenize_files: a bad line deep in a file is reported as on one thread", "[data][tokenize]") {
  test::TempDir dir;
  std::string jsonl;
  for (int i = 0; i < 2000; ++i) jsonl += "{\"text\": \"" + escaped(document(i)) + "\"}\n";
  jsonl += "{\"text\": 42}\n";
  auto a = dir.write("a.jsonl", jsonl);
  Files files{{SourceSpec{.path = a.string()}, a}};
  const tokenizer::ByteTokenizer tok;
  const std::string one = test::data_error([&] { data::tokenize_files(files, {}, tok, 1); });
  CHECK_THAT(one, Catch::Contains("a.jsonl:2001"));
  CHECK(test::data_error([&] { data::tokenize_files(files, {}, tok, 4); }) == one);
}
