// Packing and padding: next-token labels, attention masks, -100 where there is no loss.
#include <catch2/catch.hpp>

#include "data/packing.h"
#include "helpers.h"

using namespace hftrain;
using data::kIgnoreIndex;
using data::PackingMode;
using data::PackingOptions;
using I = std::vector<int64_t>;

namespace {

constexpr uint32_t kEot = 9;
constexpr int32_t kPadId = 8;

data::TokenDataset dataset_of(std::shared_ptr<data::TokenCorpus> corpus) {
  const uint64_t n = corpus->num_tokens();
  return data::TokenDataset({corpus}, {data::Piece{0, 0, n}});
}

}  // namespace

TEST_CASE("pack: documents joined by end-of-text, cut into seq_len + 1 windows", "[data][packing]") {
  auto ds = dataset_of(test::make_corpus({{1, 2, 3}, {4, 5}}, kEot));  // 1 2 3 9 4 5 9
  PackingOptions opt{.seq_len = 3, .mode = PackingMode::kPack};
  data::SampleIndex index(ds, opt);
  REQUIRE(index.size() == 2);
  std::vector<uint64_t> ids{0, 1};
  auto batch = data::collate(ds, index, ids, opt, kPadId);
  CHECK(batch.batch_size == 2);
  CHECK(batch.seq_len == 3);
  CHECK(batch.input_ids == I{1, 2, 3, 9, 4, 5});
  CHECK(batch.labels == I{2, 3, 9, 4, 5, 9});
  CHECK(batch.attention_mask == I{1, 1, 1, 1, 1, 1});
  CHECK(batch.num_target_tokens == 6);
}

TEST_CASE("pack: too little data for one sample is a DataError", "[data][packing]") {
  auto ds = dataset_of(test::make_corpus({{1, 2}}, kEot));
  CHECK_THAT(test::data_error([&] { data::SampleIndex(ds, PackingOptions{.seq_len = 3}); }),
             Catch::Contains("too few"));
}

TEST_CASE("pad: one document per sample, padded to the longest, masks and -100 labels", "[data][packing]") {
  auto ds = dataset_of(test::make_corpus({{1, 2, 3}, {4, 5}}, kEot));
  PackingOptions opt{.seq_len = 8, .mode = PackingMode::kPad};
  data::SampleIndex index(ds, opt);
  REQUIRE(index.size() == 2);
  std::vector<uint64_t> ids{1, 0};
  auto batch = data::collate(ds, index, ids, opt, kPadId);
  CHECK(batch.seq_len == 3);  // the longest sample, not seq_len
  CHECK(batch.input_ids == I{4, 5, kPadId, 1, 2, 3});
  CHECK(batch.labels == I{5, 9, kIgnoreIndex, 2, 3, 9});
  CHECK(batch.attention_mask == I{1, 1, 0, 1, 1, 1});
  CHECK(batch.num_target_tokens == 5);

  opt.pad_to_multiple_of = 4;
  auto rounded = data::collate(ds, index, ids, opt, kPadId);
  CHECK(rounded.seq_len == 4);
  CHECK(rounded.input_ids == I{4, 5, kPadId, kPadId, 1, 2, 3, kPadId});
  CHECK(rounded.labels == I{5, 9, kIgnoreIndex, kIgnoreIndex, 2, 3, 9, kIgnoreIndex});
  CHECK(rounded.attention_mask == I{1, 1, 0, 0, 1, 1, 1, 0});
}

TEST_CASE("pad: a long document is cut into pieces, every target is trained exactly once", "[data][packing]") {
  auto ds = dataset_of(test::make_corpus({{1, 2, 3, 4, 5, 6, 7, 10, 11, 12}}, kEot));  // 11 tokens
  PackingOptions opt{.seq_len = 4, .mode = PackingMode::kPad};
  data::SampleIndex index(ds, opt);
  REQUIRE(index.size() == 3);
  std::vector<uint64_t> ids{0, 1, 2};
  auto batch = data::collate(ds, index, ids, opt, kPadId);
  CHECK(batch.seq_len == 4);
  CHECK(batch.input_ids == I{1, 2, 3, 4, 5, 6, 7, 10, 11, 12, kPadId, kPadId});
  CHECK(batch.labels == I{2, 3, 4, 5, 6, 7, 10, 11, 12, 9, kIgnoreIndex, kIgnoreIndex});
  CHECK(batch.num_target_tokens == 10);
}

TEST_CASE("prompt tokens carry no loss in both modes", "[data][packing]") {
  // prompt 1 2, response 3, end-of-text; then a plain document 4.
  auto corpus = test::make_corpus({{1, 2, 3}, {4}}, kEot, {{0, 0, 1}, {1}});
  auto ds = dataset_of(corpus);
  PackingOptions pad{.seq_len = 8, .mode = PackingMode::kPad};
  data::SampleIndex pad_index(ds, pad);
  std::vector<uint64_t> first{0};
  auto batch = data::collate(ds, pad_index, first, pad, kPadId);
  CHECK(batch.input_ids == I{1, 2, 3});
  CHECK(batch.labels == I{kIgnoreIndex, 3, 9});  // predicting prompt token 2 is not trained
  CHECK(batch.num_target_tokens == 2);

  PackingOptions pack{.seq_len = 5, .mode = PackingMode::kPack};  // 1 2 3 9 4 9
  data::SampleIndex pack_index(ds, pack);
  auto packed = data::collate(ds, pack_index, first, pack, kPadId);
  CHECK(packed.input_ids == I{1, 2, 3, 9, 4});
  CHECK(packed.labels == I{kIgnoreIndex, 3, 9, 4, 9});
}

TEST_CASE("a dataset of several pieces reads as one stream", "[data][packing]") {
  auto a = test::make_corpus({{1, 2}, {3}}, kEot);  // 1 2 9 | 3 9
  auto b = test::make_corpus({{5, 6}}, kEot);       // 5 6 9
  data::TokenDataset ds({a, b}, {data::Piece{0, 3, 5}, data::Piece{1, 0, 3}, data::Piece{0, 0, 3}});
  CHECK(ds.num_tokens() == 8);
  std::vector<int64_t> tokens(8);
  std::vector<uint8_t> train(8);
  ds.read(0, 8, tokens.data(), train.data());
  CHECK(tokens == I{3, 9, 5, 6, 9, 1, 2, 9});
  ds.read(4, 3, tokens.data(), train.data());
  CHECK(I(tokens.begin(), tokens.begin() + 3) == I{9, 1, 2});
  // Pad mode keeps documents apart even when pieces are adjacent in the stream.
  data::SampleIndex index(ds, PackingOptions{.seq_len = 8, .mode = PackingMode::kPad});
  CHECK(index.size() == 3);
  CHECK(index[1].begin == 2);
  CHECK(index[1].length == 3);
}

TEST_CASE("pack with document mask: positions restart per document, no target across a boundary",
          "[data][packing]") {
  // 1 2 3 9 | 4 5 9 | 6 7 8 10 9: rows of 5 positions (6 tokens, overlapping by one).
  auto ds = dataset_of(test::make_corpus({{1, 2, 3}, {4, 5}, {6, 7, 8, 10}}, kEot));
  PackingOptions opt{.seq_len = 5, .mode = PackingMode::kPack, .document_mask = true};
  data::SampleIndex index(ds, opt);
  REQUIRE(index.size() == 2);
  std::vector<uint64_t> ids{0, 1};
  auto batch = data::collate(ds, index, ids, opt, kPadId);
  CHECK(batch.input_ids == I{1, 2, 3, 9, 4, /**/ 5, 9, 6, 7, 8});
  CHECK(batch.position_ids == I{0, 1, 2, 3, 0, /**/ 0, 1, 0, 1, 2});
  // The end-of-text token is a document's last target; what follows it is never one.
  CHECK(batch.labels == I{2, 3, 9, kIgnoreIndex, 5, /**/ 9, kIgnoreIndex, 7, 8, 10});
  CHECK(batch.num_target_tokens == 8);

  // Without the mask the same rows run on across documents.
  opt.document_mask = false;
  auto plain = data::collate(ds, index, ids, opt, kPadId);
  CHECK(plain.position_ids.empty());
  CHECK(plain.labels == I{2, 3, 9, 4, 5, /**/ 9, 6, 7, 8, 10});
}

TEST_CASE("pack with document mask: rows inside one document need no positions", "[data][packing]") {
  auto ds = dataset_of(test::make_corpus({{1, 2, 3, 4, 5, 6}, {11, 12}}, kEot));  // 1 2 3 4 5 6 9 | 11 12 9
  PackingOptions opt{.seq_len = 4, .mode = PackingMode::kPack, .document_mask = true};
  data::SampleIndex index(ds, opt);
  std::vector<uint64_t> first{0};
  auto batch = data::collate(ds, index, first, opt, kPadId);
  CHECK(batch.position_ids.empty());  // 0..T-1: the model's plain causal path
  CHECK(batch.labels == I{2, 3, 4, 5});
  std::vector<uint64_t> second{1};  // 5 6 9 | 11 12: the boundary inside the row
  auto crossing = data::collate(ds, index, second, opt, kPadId);
  CHECK(crossing.input_ids == I{5, 6, 9, 11});
  CHECK(crossing.position_ids == I{0, 1, 2, 0});
  CHECK(crossing.labels == I{6, 9, kIgnoreIndex, 12});
}

TEST_CASE("dataset read marks document starts, and a piece's start is one", "[data][packing]") {
  auto corpus = test::make_corpus({{1, 2}, {3, 4, 5}, {6}}, kEot);  // 1 2 9 | 3 4 5 9 | 6 9
  // Two pieces: the first document, then the third (a validation split's shape).
  data::TokenDataset ds({corpus}, {data::Piece{0, 0, 3}, data::Piece{0, 7, 9}});
  std::vector<int64_t> tokens(5);
  std::vector<uint8_t> train(5), starts(5);
  ds.read(0, 5, tokens.data(), train.data(), starts.data());
  CHECK(tokens == I{1, 2, 9, 6, 9});
  CHECK(starts == std::vector<uint8_t>{1, 0, 0, 1, 0});
  data::TokenDataset whole({corpus}, {data::Piece{0, 0, corpus->num_tokens()}});
  std::vector<int64_t> t2(6);
  std::vector<uint8_t> tr2(6), s2(6);
  whole.read(1, 6, t2.data(), tr2.data(), s2.data());  // 2 9 3 4 5 9
  CHECK(s2 == std::vector<uint8_t>{0, 0, 1, 0, 0, 0});
}
