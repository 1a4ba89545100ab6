// The loader: batches as tensors, prefetching identical to synchronous loading, exactly-once
// epochs through the loader, resume by cursor, data-wait accounting.

#include "../torch_catch.h"  // first: see the file
#include <algorithm>


#include "tokenizer/byte_tokenizer.h"
#include "data/loader.h"
#include "helpers.h"

using namespace hftrain;
using data::SourceSpec;

namespace {

struct Fixture {
  test::TempDir dir;
  tokenizer::ByteTokenizer tok;
  data::DataOptions options;

  explicit Fixture(data::PackingMode mode = data::PackingMode::kPack) {
    std::string text;
    for (int i = 0; i < 60; ++i)
      text += "doc " + std::to_string(i) + std::string(static_cast<size_t>(i % 7), '!') + "\n%\n";
    auto f = dir.write("docs.txt", text);
    options.dataset.train = {SourceSpec{.path = f.string(), .separator = "%"}};
    options.dataset.cache.dir = (dir.path() / "cache").string();
    options.packing = data::PackingOptions{.seq_len = 16, .mode = mode, .pad_to_multiple_of = 4};
    options.loader.batch_size = 4;
    options.loader.sampler.seed = 11;
  }
};

std::vector<std::vector<int64_t>> rows(const torch::Tensor& t) {
  auto c = t.contiguous();
  std::vector<std::vector<int64_t>> out;
  for (int64_t r = 0; r < c.size(0); ++r) {
    auto row = c[r];
    out.emplace_back(row.data_ptr<int64_t>(), row.data_ptr<int64_t>() + row.numel());
  }
  return out;
}

void check_same(const data::Batch& a, const data::Batch& b) {
  CHECK(torch::equal(a.input_ids, b.input_ids));
  CHECK(torch::equal(a.labels, b.labels));
  CHECK(torch::equal(a.attention_mask, b.attention_mask));
  CHECK(a.num_target_tokens == b.num_target_tokens);
  CHECK(a.cursor == b.cursor);
}

}  // namespace

TEST_CASE("loader: (B, T) int64 tensors, labels shifted, next-token targets counted", "[data][loader]") {
  Fixture fx;
  data::DataLoader loader(fx.options, fx.tok, torch::kCPU);
  auto batch = loader.next();
  CHECK(batch.input_ids.sizes() == torch::IntArrayRef({4, 16}));
  CHECK(batch.input_ids.dtype() == torch::kInt64);
  CHECK(batch.labels.sizes() == batch.input_ids.sizes());
  CHECK(batch.attention_mask.sizes() == batch.input_ids.sizes());
  CHECK(batch.num_target_tokens == 64);
  CHECK(batch.cursor == 0);
  CHECK(loader.cursor() == 4);
  // Packed rows are windows of one stream: a row's labels are its inputs moved left by one.
  CHECK(torch::equal(batch.labels.slice(1, 0, 15), batch.input_ids.slice(1, 1, 16)));
}

TEST_CASE("loader: prefetching gives exactly the batches of synchronous loading", "[data][loader]") {
  for (auto mode : {data::PackingMode::kPack, data::PackingMode::kPad}) {
    Fixture fx(mode);
    fx.options.loader.prefetch_batches = 0;
    data::DataLoader sync(fx.options, fx.tok, torch::kCPU);
    fx.options.loader.prefetch_batches = 3;
    fx.options.loader.num_workers = 3;
    data::DataLoader async(fx.options, fx.tok, torch::kCPU);
    for (int i = 0; i < 40; ++i) check_same(sync.next(), async.next());
    CHECK(async.data_wait_seconds() > 0.0);
    CHECK(async.last_wait_seconds() >= 0.0);
    CHECK(async.mean_wait_seconds() == Approx(async.data_wait_seconds() / 40));
  }
}

TEST_CASE("loader: one epoch serves every sample exactly once", "[data][loader]") {
  Fixture fx;
  fx.options.loader.batch_size = 1;
  data::DataLoader loader(fx.options, fx.tok, torch::kCPU);
  const uint64_t n = loader.num_samples();
  REQUIRE(n > 10);
  CHECK(loader.batches_per_epoch() == n);
  std::vector<std::vector<int64_t>> served;
  for (uint64_t i = 0; i < n; ++i) {
    auto r = rows(loader.next().input_ids);
    served.push_back(r[0]);
  }
  CHECK(loader.epoch() == 1);
  // The same rows as listing the samples in corpus order (shuffle off).
  fx.options.loader.sampler.shuffle = false;
  data::DataLoader ordered(fx.options, fx.tok, torch::kCPU);
  std::vector<std::vector<int64_t>> all;
  for (uint64_t i = 0; i < n; ++i) all.push_back(rows(ordered.next().input_ids)[0]);
  CHECK(served != all);  // shuffled
  std::sort(served.begin(), served.end());
  std::sort(all.begin(), all.end());
  CHECK(served == all);
}

TEST_CASE("loader: seek(cursor) resumes exactly where an uninterrupted run goes on", "[data][loader]") {
  Fixture fx;
  data::DataLoader straight(fx.options, fx.tok, torch::kCPU);
  std::vector<data::Batch> expected;
  uint64_t saved = 0;
  for (int i = 0; i < 30; ++i) {  // crosses epoch boundaries
    if (i == 13) saved = straight.cursor();
    expected.push_back(straight.next());
  }
  data::DataLoader resumed(fx.options, fx.tok, torch::kCPU);
  resumed.next();  // whatever it prefetched is dropped by seek
  resumed.seek(saved);
  CHECK(resumed.cursor() == saved);
  for (int i = 13; i < 30; ++i) check_same(resumed.next(), expected[static_cast<size_t>(i)]);
  CHECK(resumed.epoch() == straight.epoch());
}

TEST_CASE("loader: padded batches carry masks, validation loader from a fraction", "[data][loader]") {
  Fixture fx(data::PackingMode::kPad);
  fx.options.dataset.validation_fraction = 0.2;
  auto loaders = data::make_loaders(fx.options, fx.tok, torch::kCPU);
  REQUIRE(loaders.validation);
  CHECK(loaders.validation->num_samples() == 12);
  auto batch = loaders.train->next();
  CHECK(batch.input_ids.size(1) % 4 == 0);
  auto real = batch.attention_mask.sum().item<int64_t>();
  auto targets = (batch.labels != data::kIgnoreIndex).sum().item<int64_t>();
  CHECK(targets == batch.num_target_tokens);
  CHECK(real == targets);  // in pad mode every real position has a target
  CHECK(torch::equal(batch.input_ids.masked_select(batch.attention_mask == 0),
                     torch::full({batch.input_ids.numel() - real}, fx.tok.pad_id(), torch::kInt64)));
}

TEST_CASE("loader: pinned host batches and device tensors on CUDA", "[data][loader][gpu]") {
  if (!torch::cuda::is_available()) {
    WARN("no CUDA device; skipped");
    return;
  }
  Fixture fx;
  data::DataLoader gpu(fx.options, fx.tok, torch::Device(torch::kCUDA, 0));
  data::DataLoader cpu(fx.options, fx.tok, torch::kCPU);
  for (int i = 0; i < 10; ++i) {
    auto g = gpu.next();
    auto c = cpu.next();
    CHECK(g.input_ids.is_cuda());
    CHECK(torch::equal(g.input_ids.cpu(), c.input_ids));
    CHECK(torch::equal(g.labels.cpu(), c.labels));
  }
}

TEST_CASE("loader: without wrap a pass of batches_per_epoch counts every sample's targets once", "[data][loader]") {
  // Evaluation runs ceil(n / (B x ranks)) batches; the last one reaches past the end, and those
  // rows must not count (their samples were already counted at the start of the pass).
  Fixture fx;
  fx.options.loader.batch_size = 1;
  data::DataLoader one(fx.options, fx.tok, torch::kCPU);
  const uint64_t n = one.num_samples();
  int64_t once = 0;
  for (uint64_t i = 0; i < n; ++i) once += one.next().num_target_tokens;
  for (int world : {1, 2, 3}) {
    int64_t total = 0;
    for (int rank = 0; rank < world; ++rank) {
      fx.options.loader.batch_size = 7;
      fx.options.loader.wrap = false;
      fx.options.loader.rank = rank;
      fx.options.loader.world_size = world;
      data::DataLoader loader(fx.options, fx.tok, torch::kCPU);
      REQUIRE((n % (7 * static_cast<uint64_t>(world))) != 0);  // the last batch reaches past the end
      for (uint64_t b = 0; b < loader.batches_per_epoch(); ++b) {
        auto batch = loader.next();
        total += batch.num_target_tokens;
        CHECK(batch.labels.ne(-100).sum().item<int64_t>() == batch.num_target_tokens);
      }
    }
    CHECK(total == once);
  }
}

TEST_CASE("loader: packed documents' starts come with the batch, found on the host", "[data][loader][packing]") {
  Fixture fx;
  fx.options.packing.document_mask = true;
  data::DataLoader loader(fx.options, fx.tok, torch::kCPU);
  for (int i = 0; i < 3; ++i) {
    const data::Batch b = loader.next();
    REQUIRE(b.position_ids.defined());
    REQUIRE(b.document_offsets.defined());
    CHECK(b.document_offsets.scalar_type() == torch::kInt32);
    // What the model would otherwise find on the device: every position 0, then the token count.
    const torch::Tensor starts = b.position_ids.reshape({-1}).eq(0).nonzero().view({-1});
    const torch::Tensor expected = torch::cat({starts, torch::full({1}, b.position_ids.numel(), starts.options())});
    CHECK(b.document_offsets.equal(expected.to(torch::kInt32)));
  }
  fx.options.packing.document_mask = false;
  data::DataLoader plain(fx.options, fx.tok, torch::kCPU);
  CHECK_FALSE(plain.next().document_offsets.defined());
}
