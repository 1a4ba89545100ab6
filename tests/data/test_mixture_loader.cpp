// Weighted mixtures through the loader: rows drawn from each source by weight (a row never mixes
// sources), per-source token counts and epochs, resume and world-size independence, per-source
// validation, and the errors for bad sources.
#include "../torch_catch.h"  // first: see the file

#include "data/loader.h"
#include "helpers.h"
#include "tokenizer/byte_tokenizer.h"

using namespace hftrain;
using data::SourceSpec;

namespace {

// Documents whose every byte says which source they come from: 'a' (small), 'b' (large).
std::string docs_of(char letter, int count) {
  std::string text;
  for (int i = 0; i < count; ++i) text += std::string(static_cast<size_t>(5 + i % 9), letter) + "\n%\n";
  return text;
}

struct Fixture {
  test::TempDir dir;
  tokenizer::ByteTokenizer tok;
  data::DataOptions options;

  Fixture(double weight_a, double weight_b, data::PackingMode mode = data::PackingMode::kPack) {
    auto a = dir.write("a.txt", docs_of('a', 40));
    auto b = dir.write("b.txt", docs_of('b', 400));
    options.dataset.train = {SourceSpec{.path = a.string(), .weight = weight_a, .separator = "%"},
                             SourceSpec{.path = b.string(), .weight = weight_b, .separator = "%"}};
    options.dataset.cache.dir = (dir.path() / "cache").string();
    options.packing = data::PackingOptions{.seq_len = 8, .mode = mode};
    options.loader.batch_size = 4;
    options.loader.sampler.seed = 3;
    options.loader.prefetch_batches = 0;
  }
};

// The source of a row: the letter its real tokens are made of ('\n', '%' and end-of-text aside).
char source_of_row(const torch::Tensor& row, const torch::Tensor& mask) {
  char seen = 0;
  for (int64_t t = 0; t < row.size(0); ++t) {
    if (mask[t].item<int64_t>() == 0) continue;
    const auto id = row[t].item<int64_t>();
    if (id == 'a' || id == 'b') {
      if (seen != 0 && seen != id) return '?';
      seen = static_cast<char>(id);
    }
  }
  return seen;
}

}  // namespace

TEST_CASE("mixture loader: rows drawn by weight, one source per row, tokens counted per source",
          "[data][mixture]") {
  Fixture fx(0.75, 0.25);  // the small source a is drawn three times as often as b
  auto loaders = data::make_loaders(fx.options, fx.tok, torch::kCPU);
  REQUIRE(loaders.datasets.train_sources.size() == 2);
  CHECK(loaders.datasets.train_sources[0].name == "a");
  CHECK(loaders.datasets.train_sources[1].name == "b");
  int rows_a = 0, rows_b = 0;
  uint64_t tokens_a = 0, tokens_b = 0;
  // 1024 batches of 4: one block of the mixture's order (mixture.h), where the shares are exact.
  for (int step = 0; step < 1024; ++step) {
    const data::Batch batch = loaders.train->next();
    REQUIRE(batch.source_tokens.size() == 2);
    tokens_a += batch.source_tokens[0];
    tokens_b += batch.source_tokens[1];
    for (int64_t r = 0; r < batch.input_ids.size(0); ++r) {
      const char s = source_of_row(batch.input_ids[r], batch.attention_mask[r]);
      REQUIRE(s != '?');
      (s == 'a' ? rows_a : rows_b) += 1;
    }
  }
  CHECK(rows_a + rows_b == 4096);
  CHECK(rows_a == Approx(3072).margin(3));
  CHECK(tokens_a == static_cast<uint64_t>(rows_a) * 8);  // packed rows hold seq_len tokens each
  CHECK(tokens_b == static_cast<uint64_t>(rows_b) * 8);
  // Each source's passes: its draws over its samples (packed: (tokens - 1) / seq_len of them).
  const std::vector<double> epochs = loaders.train->source_epochs();
  REQUIRE(epochs.size() == 2);
  const auto samples = [&](size_t s) {
    return static_cast<double>((loaders.datasets.train_sources[s].data->num_tokens() - 1) / 8);
  };
  CHECK(epochs[0] == Approx(rows_a / samples(0)));
  CHECK(epochs[1] == Approx(rows_b / samples(1)));
  CHECK(epochs[0] > 5 * epochs[1]);  // the small, heavy source goes round far more often
}

TEST_CASE("mixture loader: the stream is the same after a seek and on any world size", "[data][mixture]") {
  Fixture fx(0.5, 0.5, data::PackingMode::kPad);
  data::DataLoader whole(fx.options, fx.tok, torch::kCPU);
  std::vector<torch::Tensor> reference;
  for (int i = 0; i < 12; ++i) reference.push_back(whole.next().input_ids);

  data::DataLoader resumed(fx.options, fx.tok, torch::kCPU);
  resumed.seek(4 * 5);
  CHECK(torch::equal(resumed.next().input_ids, reference[5]));

  // Two ranks of batch 2 take the halves of each global batch of 4.
  auto options = fx.options;
  options.loader.batch_size = 2;
  options.loader.world_size = 2;
  for (int rank = 0; rank < 2; ++rank) {
    options.loader.rank = rank;
    data::DataLoader shard(options, fx.tok, torch::kCPU);
    const data::Batch b = shard.next();
    const auto expected = reference[0].slice(0, 2 * rank, 2 * rank + 2);
    const int64_t t = std::min(b.input_ids.size(1), expected.size(1));
    CHECK(torch::equal(b.input_ids.slice(1, 0, t), expected.slice(1, 0, t)));
  }
}

TEST_CASE("mixture loader: a held-out part of each source is evaluated on its own", "[data][mixture]") {
  Fixture fx(1.0, 1.0);
  fx.options.dataset.validation_fraction = 0.1;
  auto loaders = data::make_loaders(fx.options, fx.tok, torch::kCPU);
  REQUIRE(loaders.validation_sources.size() == 2);
  CHECK(loaders.validation_sources[0].first == "a");
  const data::Batch batch = loaders.validation_sources[1].second->next();
  CHECK(source_of_row(batch.input_ids[0], batch.attention_mask[0]) == 'b');
  REQUIRE(loaders.datasets.validation);  // all held-out documents together
  CHECK(loaders.datasets.validation->num_tokens() == loaders.datasets.validation_sources[0].data->num_tokens() +
                                                         loaders.datasets.validation_sources[1].data->num_tokens());
}

TEST_CASE("mixture loader: a zero weight leaves a source out, bad sources name themselves", "[data][mixture]") {
  Fixture fx(0.0, 1.0);
  auto loaders = data::make_loaders(fx.options, fx.tok, torch::kCPU);
  REQUIRE(loaders.datasets.train_sources.size() == 1);
  CHECK(loaders.datasets.train_sources[0].name == "b");

  Fixture tiny(1.0, 1.0);
  tiny.options.dataset.train[0].path = tiny.dir.write("tiny.txt", "ab\n").string();
  tiny.options.packing.seq_len = 64;
  CHECK_THAT(test::data_error([&] { data::make_loaders(tiny.options, tiny.tok, torch::kCPU); }),
             Catch::Contains("data.train source `tiny`"));

  Fixture same(1.0, 1.0);
  same.options.dataset.train[1].name = "a";
  try {
    data::make_loaders(same.options, same.tok, torch::kCPU);
    FAIL("expected a ConfigError");
  } catch (const util::ConfigError& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("two data.train sources are named `a`"));
  }
}

TEST_CASE("mixture loader: a held-out part too small for one sample names its source", "[data][mixture]") {
  Fixture fx(1.0, 1.0);
  fx.options.dataset.validation_fraction = 0.02;  // one short document of source a
  fx.options.packing.seq_len = 64;
  CHECK_THAT(test::data_error([&] { data::make_loaders(fx.options, fx.tok, torch::kCPU); }),
             Catch::Contains("the held-out part of data.train source `a`"));
}
