// The token cache (hit on the second load, invalidated when a file changes, crash-safe files),
// token shards, and train/validation splits.
#include <catch2/catch.hpp>

#include <cstring>
#include <fstream>
#include <set>

#include "tokenizer/byte_tokenizer.h"
#include "data/dataset.h"
#include "data/token_cache.h"
#include "data/token_shard.h"
#include "helpers.h"

using namespace hftrain;
using data::SourceSpec;
namespace fs = std::filesystem;

namespace {

using Files = std::vector<std::pair<SourceSpec, fs::path>>;

std::vector<uint32_t> tokens_of(const data::TokenCorpus& c) {
  std::vector<uint32_t> out;
  for (uint64_t i = 0; i < c.num_tokens(); ++i) out.push_back(c.token(i));
  return out;
}

size_t count_files(const fs::path& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

}  // namespace

TEST_CASE("cache: the second load is a hit with identical tokens, a changed file is a miss", "[data][cache]") {
  test::TempDir dir;
  auto a = dir.write("data/a.txt", "first document\n%\nsecond document\n");
  auto b = dir.write("data/b.jsonl", "{\"text\": \"json document\"}\n");
  Files files{{SourceSpec{.path = a.string(), .separator = "%"}, a}, {SourceSpec{.path = b.string()}, b}};
  tokenizer::ByteTokenizer tok;
  data::CacheOptions cache{.dir = (dir.path() / "cache").string()};

  auto first = data::load_or_tokenize(files, {}, tok, cache);
  CHECK_FALSE(first.hit);
  CHECK(first.num_documents == 3);
  REQUIRE(fs::exists(first.file));
  CHECK(count_files(dir.path() / "cache") == 1);  // no temporary file left behind
  auto second = data::load_or_tokenize(files, {}, tok, cache);
  CHECK(second.hit);
  CHECK(second.file == first.file);
  CHECK(tokens_of(*second.corpus) == tokens_of(*data::tokenize_files(files, {}, tok)));
  CHECK(second.corpus->num_docs() == 3);
  CHECK(second.corpus->token_width() == 2);  // 258 ids fit in 16 bits

  // Same size, new content and a new modification time: a miss, and the new text is what loads.
  dir.write("data/a.txt", "FIRST document\n%\nsecond document\n");
  fs::last_write_time(a, fs::last_write_time(a) + std::chrono::seconds(5));
  auto third = data::load_or_tokenize(files, {}, tok, cache);
  CHECK_FALSE(third.hit);
  CHECK(third.file != first.file);
  CHECK(third.corpus->token(0) == 'F');
  // A different tokenizer is a different key.
  tokenizer::ByteTokenizer other({tokenizer::kEndOfTextToken, tokenizer::kPadToken, "<|sep|>"});
  CHECK_FALSE(data::load_or_tokenize(files, {}, other, cache).hit);
}

TEST_CASE("cache: a damaged cache file is a miss and is rewritten", "[data][cache]") {
  test::TempDir dir;
  auto a = dir.write("a.txt", "some text");
  Files files{{SourceSpec{.path = a.string()}, a}};
  tokenizer::ByteTokenizer tok;
  data::CacheOptions cache{.dir = (dir.path() / "cache").string()};
  auto first = data::load_or_tokenize(files, {}, tok, cache);
  fs::resize_file(first.file, fs::file_size(first.file) - 3);  // a torn write
  auto second = data::load_or_tokenize(files, {}, tok, cache);
  CHECK_FALSE(second.hit);
  CHECK(second.corpus->num_tokens() == 10);
  CHECK(data::load_or_tokenize(files, {}, tok, cache).hit);
}

TEST_CASE("cache: chat documents keep their loss mask through the cache", "[data][cache]") {
  test::TempDir dir;
  auto f = dir.write("c.jsonl", "{\"prompt\": \"ab\", \"response\": \"c\"}\n");
  Files files{{SourceSpec{.path = f.string(), .format = data::SourceFormat::kChat}, f}};
  tokenizer::ByteTokenizer tok;
  data::CacheOptions cache{.dir = (dir.path() / "cache").string()};
  data::load_or_tokenize(files, {}, tok, cache);
  auto hit = data::load_or_tokenize(files, {}, tok, cache);
  REQUIRE(hit.hit);
  REQUIRE(hit.corpus->has_mask());
  CHECK(tokens_of(*hit.corpus) == std::vector<uint32_t>{'a', 'b', 'c', 256});
  CHECK_FALSE(hit.corpus->trains(0));
  CHECK_FALSE(hit.corpus->trains(1));
  CHECK(hit.corpus->trains(2));
  CHECK(hit.corpus->trains(3));
}

TEST_CASE("cache: an unwritable cache folder only warns", "[data][cache]") {
  test::TempDir dir;
  auto a = dir.write("a.txt", "text");
  auto blocker = dir.write("not-a-folder", "x");
  Files files{{SourceSpec{.path = a.string()}, a}};
  tokenizer::ByteTokenizer tok;
  auto result = data::load_or_tokenize(files, {}, tok, data::CacheOptions{.dir = (blocker / "cache").string()});
  CHECK_FALSE(result.hit);
  CHECK(result.file.empty());
  CHECK(result.corpus->num_tokens() == 5);
}

TEST_CASE("token shards: raw uint16/uint32 and llm.c headers, bad shards are DataErrors", "[data][shard]") {
  test::TempDir dir;
  std::vector<uint16_t> t16{1, 2, 256, 3};
  std::string raw16(reinterpret_cast<const char*>(t16.data()), t16.size() * 2);
  auto shard16 = dir.write("a.bin", raw16);
  auto c16 = data::open_token_shard(shard16, data::TokenDtype::kUint16, 258);
  CHECK(tokens_of(*c16) == std::vector<uint32_t>{1, 2, 256, 3});

  std::vector<uint32_t> t32{70000, 5};
  auto shard32 = dir.write("b.bin", std::string(reinterpret_cast<const char*>(t32.data()), 8));
  CHECK(tokens_of(*data::open_token_shard(shard32, data::TokenDtype::kUint32, 100000)) == t32);

  std::vector<int32_t> header(256, 0);
  header[0] = 20240520;
  header[1] = 1;
  header[2] = 4;
  std::string llmc(reinterpret_cast<const char*>(header.data()), 1024);
  auto with_header = dir.write("c.bin", llmc + raw16);
  CHECK(tokens_of(*data::open_token_shard(with_header, data::TokenDtype::kUint32, 258)) ==
        std::vector<uint32_t>{1, 2, 256, 3});
  auto truncated = dir.write("d.bin", llmc + raw16.substr(0, 6));
  CHECK_THAT(test::data_error([&] { data::open_token_shard(truncated, data::TokenDtype::kUint16, 258); }),
             Catch::Contains("header says 4 tokens"));
  auto odd = dir.write("e.bin", raw16.substr(0, 7));
  CHECK_THAT(test::data_error([&] { data::open_token_shard(odd, data::TokenDtype::kUint16, 258); }),
             Catch::Contains("not a whole number"));
  CHECK_THAT(test::data_error([&] { data::open_token_shard(shard16, data::TokenDtype::kUint16, 100); }),
             Catch::Contains("token 2 has id 256"));
  auto empty = dir.write("f.bin", "");
  CHECK_THAT(test::data_error([&] { data::open_token_shard(empty, data::TokenDtype::kUint16, 258); }),
             Catch::Contains("holds no tokens"));
  CHECK_THAT(test::data_error([&] { data::open_token_shard(dir.path() / "none.bin", data::TokenDtype::kUint16, 258); }),
             Catch::Contains("none.bin"));
}

TEST_CASE("token shards: ids past the checked head are refused as they are read", "[data][shard]") {
  // A shard far larger than memory is not scanned at open: its first 2^20 tokens are, the rest
  // when a batch reads them, with the same message.
  test::TempDir dir;
  std::vector<uint16_t> tokens((1u << 20) + 10, 7);
  tokens.back() = 300;
  auto shard = dir.write("big.bin", std::string(reinterpret_cast<const char*>(tokens.data()), tokens.size() * 2));
  auto corpus = data::open_token_shard(shard, data::TokenDtype::kUint16, 258);
  std::vector<int64_t> ids(4);
  std::vector<uint8_t> train(4);
  corpus->copy(0, 4, ids.data(), train.data());  // the good part reads
  CHECK(ids == std::vector<int64_t>{7, 7, 7, 7});
  CHECK_THAT(test::data_error([&] { corpus->copy(tokens.size() - 4, tokens.size(), ids.data(), train.data()); }),
             Catch::Contains("token 1048585 has id 300, outside the tokenizer's vocabulary of 258"));
}

TEST_CASE("split by fraction: disjoint documents, deterministic, every document somewhere", "[data][split]") {
  test::TempDir dir;
  std::string text;
  for (int i = 0; i < 100; ++i) text += "document number " + std::to_string(i) + "\n%\n";
  auto f = dir.write("docs.txt", text);
  data::DatasetOptions options;
  options.train = {SourceSpec{.path = f.string(), .separator = "%"}};
  options.validation_fraction = 0.1;
  options.split_seed = 5;
  options.cache.dir = (dir.path() / "cache").string();
  tokenizer::ByteTokenizer tok;
  auto sets = data::build_datasets(options, tok);
  REQUIRE(sets.validation);
  auto docs_of = [&](const data::TokenDataset& ds) {
    std::vector<int64_t> tokens(ds.num_tokens());
    std::vector<uint8_t> train(ds.num_tokens());
    ds.read(0, ds.num_tokens(), tokens.data(), train.data());
    std::string s(tokens.begin(), tokens.end());  // byte ids; eot (256) truncates to a separator char
    std::set<std::string> docs;
    size_t start = 0;
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (tokens[i] == tok.eot_id()) {
        docs.insert(s.substr(start, i - start));
        start = i + 1;
      }
    }
    return docs;
  };
  auto train_docs = docs_of(*sets.train);
  auto val_docs = docs_of(*sets.validation);
  CHECK(val_docs.size() == 10);
  CHECK(train_docs.size() == 90);
  for (const auto& d : val_docs) CHECK(train_docs.count(d) == 0);
  auto again = data::build_datasets(options, tok);
  CHECK(again.cache_hits == 1);
  CHECK(docs_of(*again.validation) == val_docs);
  options.split_seed = 6;
  CHECK(docs_of(*data::build_datasets(options, tok).validation) != val_docs);
}

TEST_CASE("split by sources, fraction out of range is a ConfigError", "[data][split]") {
  test::TempDir dir;
  auto t = dir.write("train.txt", "training text");
  auto v = dir.write("val.txt", "validation");
  data::DatasetOptions options;
  options.train = {SourceSpec{.path = t.string()}};
  options.validation = {SourceSpec{.path = v.string()}};
  options.cache.enabled = false;
  tokenizer::ByteTokenizer tok;
  auto sets = data::build_datasets(options, tok);
  CHECK(sets.train->num_tokens() == 14);
  CHECK(sets.validation->num_tokens() == 11);
  options.validation.clear();
  options.validation_fraction = 1.0;
  CHECK_THROWS_AS(data::build_datasets(options, tok), util::ConfigError);
  options.validation_fraction = 0.5;  // one document, one stream: the tail of the tokens
  auto tail = data::build_datasets(options, tok);
  CHECK(tail.train->num_tokens() == 7);
  CHECK(tail.validation->num_tokens() == 7);
}
