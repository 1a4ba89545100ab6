// The optimizer state saved as one shard file per rank (ckpt/optimizer_save.h, optimizer_shards.h):
// the pieces two ranks of one ZeRO layout write read back exactly into another layout of three
// ranks and into the whole state (ddp); a checkpoint in the layout before per-rank shards still
// reads; a missing, truncated or damaged shard file is a CheckpointError naming it (or, for
// changed data, a verification problem naming it); a failed save leaves nothing behind.
#include "../torch_catch.h"  // first: see the file

#include <unistd.h>

#include <cstring>
#include <fstream>

#include "ckpt/layout.h"
#include "ckpt/optimizer_save.h"
#include "ckpt/optimizer_shards.h"
#include "ckpt/verify.h"
#include "parallel/comm/communicator.h"
#include "parallel/data_parallel/shard_layout.h"
#include "helpers.h"
#include "util/strings.h"

using namespace hftrain;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using Json = nlohmann::json;

namespace {

const std::vector<std::string> kNames = {"wte.weight", "h.0.attn.weight", "h.0.attn.bias",
                                         "h.1.mlp.weight", "ln_f.bias"};
const std::vector<std::vector<int64_t>> kShapes = {{11, 6}, {6, 18}, {18}, {6, 9}, {6}};

std::vector<int64_t> numels() {
  std::vector<int64_t> out;
  for (const auto& s : kShapes) out.push_back(torch::zeros(s).numel());
  return out;
}

// The whole state of an AdamW-like optimizer: two moments per parameter, distinct values.
optim::OptimizerState whole_state() {
  optim::OptimizerState state;
  state.meta = {{"optimizer", "adamw"}, {"format", 1}, {"steps", Json::object()}};
  for (size_t i = 0; i < kNames.size(); ++i) {
    for (const char* key : {"exp_avg", "exp_avg_sq"}) {
      state.tensors.emplace_back(kNames[i] + "/" + key, torch::randn(kShapes[i]));
    }
    state.meta["steps"][kNames[i]] = 7;
  }
  return state;
}

// zero1/zero2: the gradient buckets, cut into `n` chunks.
parallel::ShardLayout bucket_layout(int n, int rank) {
  return {parallel::plan_buckets(numels(), 4, 200, n), rank, kNames, kShapes};
}

// zero3: units of parameters (the root: the embedding and the final norm; then each block).
parallel::ShardLayout unit_layout(int n, int rank) {
  const std::vector<std::vector<size_t>> units = {{0, 4}, {1, 2}, {3}};
  const auto sizes = numels();
  std::vector<parallel::Bucket> groups;
  for (const auto& unit : units) {
    parallel::Bucket g;
    g.world_size = n;
    for (size_t i : unit) {
      g.entries.push_back({i, g.numel, sizes[i]});
      g.numel += sizes[i];
    }
    g.padded_numel = (g.numel + n - 1) / n * n;
    groups.push_back(std::move(g));
  }
  return {groups, rank, kNames, kShapes};
}

// What an optimizer over `layout`'s pieces holds: its slices of `whole`, steps where it has any.
optim::OptimizerState local_state(const parallel::ShardLayout& layout,
                                  const optim::OptimizerState& whole) {
  optim::OptimizerState local;
  local.meta = whole.meta;
  local.meta["steps"] = Json::object();
  for (const auto& [name, t] : whole.tensors) {
    const std::string param = name.substr(0, name.rfind('/'));
    const parallel::ShardPiece* piece = layout.piece_of(layout.index_of(param));
    if (!piece) continue;
    local.tensors.emplace_back(name,
                               t.reshape(-1).narrow(0, piece->param_offset, piece->numel).clone());
    local.meta["steps"][param] = whole.meta["steps"][param];
  }
  return local;
}

// Commits checkpoint-<step> holding the shards of `locals` (one per simulated rank), as
// stage_optimizer_shards() and adopt_optimizer_shards() do on a real job.
fs::path save(const fs::path& run, int64_t step,
              const std::vector<parallel::LocalOptimizerState>& locals) {
  const fs::path staging = ckpt::optimizer_staging_dir(run, step, ::getpid());
  fs::create_directories(staging);
  std::vector<Json> records;
  Json files = Json::array();
  for (const auto& local : locals) {
    records.push_back(local.file >= 0 ? ckpt::write_optimizer_shard(staging, local) : Json());
    if (local.file >= 0) files.push_back(records.back()["file"]);
  }
  const ckpt::OptimizerIndex index = ckpt::index_optimizer_shards(records, locals.front().meta);
  ckpt::CheckpointWriter w(run, step, util::MapEnvironment());
  ckpt::adopt_optimizer_shards(w,
                               {{"pid", ::getpid()}, {"files", files}, {"index", index.to_json()}});
  return w.commit("h");
}

std::vector<parallel::LocalOptimizerState> two_zero_ranks(const optim::OptimizerState& whole) {
  std::vector<parallel::LocalOptimizerState> out;
  for (int r = 0; r < 2; ++r) {
    const auto layout = bucket_layout(2, r);
    const auto local = local_state(layout, whole);
    out.push_back({layout.pieces_of(local), local.meta, r, 2});
  }
  return out;
}

torch::Tensor find(const optim::OptimizerState& s, const std::string& name) {
  for (const auto& [n, t] : s.tensors) {
    if (n == name) return t;
  }
  FAIL("no tensor " << name);
  return {};
}

// `got` is exactly `layout`'s slice of `whole`, names and step counts included.
void check_slice(const optim::OptimizerState& got, const parallel::ShardLayout& layout,
                 const optim::OptimizerState& whole) {
  REQUIRE(got.tensors.size() == whole.tensors.size());
  CHECK(got.meta == whole.meta);
  for (const auto& [name, t] : whole.tensors) {
    INFO(name);
    const parallel::ShardPiece* piece =
        layout.piece_of(layout.index_of(name.substr(0, name.rfind('/'))));
    const auto want = piece ? t.reshape(-1).narrow(0, piece->param_offset, piece->numel)
                            : t.reshape(-1).narrow(0, 0, 0);
    CHECK(torch::equal(find(got, name), want));
  }
}

// Rank 1 of 2, with rank 0 scripted: each text in `rank0` is what rank 0 contributes to the next
// all_gather_text (its length, then its bytes). Only all_gather is used.
class ScriptedPeer final : public parallel::Communicator {
 public:
  explicit ScriptedPeer(std::vector<std::string> rank0) : rank0_(std::move(rank0)) {}
  int rank() const override { return 1; }
  int size() const override { return 2; }
  std::string backend() const override { return "scripted"; }
  parallel::WorkPtr all_gather(torch::Tensor& output, const torch::Tensor& input) override {
    const std::string& text = rank0_.at(next_);
    auto theirs = output.narrow(0, 0, input.numel());
    if (input.scalar_type() == torch::kInt64) {
      theirs.fill_(static_cast<int64_t>(text.size()));
    } else {
      theirs.zero_();
      std::memcpy(theirs.data_ptr(), text.data(), text.size());
      ++next_;
    }
    output.narrow(0, input.numel(), input.numel()).copy_(input);
    return std::make_shared<Done>();
  }
  parallel::WorkPtr all_reduce(torch::Tensor&, parallel::ReduceOp) override {
    throw std::logic_error("unused");
  }
  parallel::WorkPtr reduce_scatter(torch::Tensor&, const torch::Tensor&, parallel::ReduceOp) override {
    throw std::logic_error("unused");
  }
  parallel::WorkPtr broadcast(torch::Tensor&, int) override { throw std::logic_error("unused"); }
  parallel::WorkPtr exchange(const std::vector<parallel::PeerTransfer>&) override { throw std::logic_error("unused"); }
  void barrier() override {}

 private:
  struct Done final : parallel::Work {
    void wait() override {}
  };
  std::vector<std::string> rank0_;
  size_t next_ = 0;
};

std::string load_error(const fs::path& dir) {
  try {
    const auto saved = ckpt::open_saved_optimizer(dir);
    parallel::read_whole_state(*saved);
  } catch (const util::CheckpointError& e) {
    return e.what();
  }
  FAIL("expected a CheckpointError reading " << dir);
  return {};
}

}  // namespace

TEST_CASE("two zero ranks' shards read back into three ranks of another layout and into the whole",
          "[ckpt][optimizer]") {
  test::TempDir d;
  torch::manual_seed(1);
  const auto whole = whole_state();
  const auto locals = two_zero_ranks(whole);
  const fs::path dir = save(d.path(), 4, locals);

  const auto report = ckpt::verify_checkpoint(dir);
  INFO(util::join(report.problems, "\n"));
  CHECK(report.ok());
  CHECK(report.notes.empty());
  // One file per rank, each with only that rank's elements: together exactly the state once.
  uint64_t state_bytes = 0;
  for (const auto& [name, t] : whole.tensors) state_bytes += static_cast<uint64_t>(t.numel()) * 4;
  uint64_t tensor_bytes = 0;
  for (int r = 0; r < 2; ++r) {
    const auto* f = report.manifest->find(ckpt::optimizer_shard_name(r, 2));
    REQUIRE(f);
    for (const auto& [name, t] : f->tensors)
      tensor_bytes += static_cast<uint64_t>(t.shape.at(0)) * 4;
  }
  CHECK(tensor_bytes == state_bytes);
  CHECK(report.manifest->find(ckpt::kOptimizerIndexFile));
  CHECK_FALSE(fs::exists(ckpt::optimizer_staging_dir(d.path(), 4, ::getpid())));

  const auto saved = ckpt::open_saved_optimizer(dir);
  for (int r = 0; r < 3; ++r) {
    INFO("rank " << r << " of 3");
    const auto layout = unit_layout(3, r);
    check_slice(layout.read(*saved), layout, whole);
  }
  const auto ddp = parallel::read_whole_state(*saved);
  CHECK(ddp.meta == whole.meta);
  REQUIRE(ddp.tensors.size() == whole.tensors.size());
  for (const auto& [name, t] : whole.tensors) {
    INFO(name);
    CHECK(torch::equal(find(ddp, name), t));
  }
}

TEST_CASE("step counts merge over the ranks: the largest per parameter", "[ckpt][optimizer]") {
  test::TempDir d;
  auto whole = whole_state();
  auto locals = two_zero_ranks(whole);
  // Rank 1 holds no piece of wte.weight in this layout, or a larger count for it.
  locals[1].meta["steps"]["wte.weight"] = 9;
  const fs::path dir = save(d.path(), 1, locals);
  CHECK(ckpt::open_saved_optimizer(dir)->meta()["steps"]["wte.weight"] == 9);
  CHECK(ckpt::open_saved_optimizer(dir)->meta()["steps"]["ln_f.bias"] == 7);
}

TEST_CASE("a replicated state is written once, whole, by the rank that writes it",
          "[ckpt][optimizer]") {
  test::TempDir d;
  const auto whole = whole_state();
  std::vector<parallel::LocalOptimizerState> ranks(2);
  for (int r = 0; r < 2; ++r) {
    ranks[r] = {{}, whole.meta, r == 0 ? 0 : -1, 1};
    for (const auto& [name, t] : whole.tensors)
      ranks[r].pieces.push_back({name, t.sizes().vec(), 0, t});
  }
  const fs::path dir = save(d.path(), 2, ranks);
  const auto report = ckpt::verify_checkpoint(dir);
  REQUIRE(report.ok());
  const auto* f = report.manifest->find(ckpt::optimizer_shard_name(0, 1));
  REQUIRE(f);
  CHECK(f->tensors.at("wte.weight/exp_avg").shape ==
        std::vector<int64_t>{11, 6});         // saved in its shape
  CHECK(report.manifest->files.size() == 2);  // the shard and the index
  const auto saved = ckpt::open_saved_optimizer(dir);
  for (int r = 0; r < 2; ++r)
    check_slice(bucket_layout(2, r).read(*saved), bucket_layout(2, r), whole);
}

TEST_CASE("a checkpoint from before per-rank shards still resumes, whole or sharded",
          "[ckpt][optimizer]") {
  test::TempDir d;
  const auto whole = whole_state();
  ckpt::CheckpointWriter w(d.path(), 6, util::MapEnvironment());
  w.add_safetensors(ckpt::kLegacyOptimizerTensors, whole.tensors);
  w.add_json(ckpt::kLegacyOptimizerMeta, whole.meta);
  const fs::path dir = w.commit("h");
  const auto saved = ckpt::open_saved_optimizer(dir);
  for (int r = 0; r < 2; ++r) check_slice(unit_layout(2, r).read(*saved), unit_layout(2, r), whole);
  const auto all = parallel::read_whole_state(*saved);
  for (const auto& [name, t] : whole.tensors) CHECK(torch::equal(find(all, name), t));
}

TEST_CASE("a missing, truncated or damaged shard file is a CheckpointError naming it",
          "[ckpt][optimizer]") {
  test::TempDir d;
  const auto whole = whole_state();
  const std::string second = ckpt::optimizer_shard_name(1, 2);

  SECTION("missing: only the reads that need it fail") {
    const fs::path dir = save(d.path(), 1, two_zero_ranks(whole));
    fs::remove(dir / second);
    CHECK_THAT(load_error(dir), Contains(second));
    // Rank 0 of the same layout finds all its pieces in the first file and never opens the second.
    const auto saved = ckpt::open_saved_optimizer(dir);
    check_slice(bucket_layout(2, 0).read(*saved), bucket_layout(2, 0), whole);
  }
  SECTION("truncated") {
    const fs::path dir = save(d.path(), 1, two_zero_ranks(whole));
    fs::resize_file(dir / second, fs::file_size(dir / second) - 10);
    CHECK_THAT(load_error(dir), Contains(second));
    const auto report = ckpt::verify_checkpoint(dir);
    REQUIRE(report.problems.size() == 1);
    CHECK_THAT(report.problems[0], Contains(second) && Contains("truncated"));
  }
  SECTION("a damaged header") {
    const fs::path dir = save(d.path(), 1, two_zero_ranks(whole));
    std::fstream(dir / second, std::ios::in | std::ios::out | std::ios::binary)
        .seekp(9)
        .write("#", 1);
    CHECK_THAT(load_error(dir), Contains(second));
  }
  SECTION("changed data: verification names the file (resume verifies before it loads)") {
    const fs::path dir = save(d.path(), 1, two_zero_ranks(whole));
    const auto size = fs::file_size(dir / second);
    std::fstream(dir / second, std::ios::in | std::ios::out | std::ios::binary)
        .seekp(static_cast<std::streamoff>(size - 3))
        .write("\x7f", 1);
    const auto report = ckpt::verify_checkpoint(dir);
    REQUIRE(report.problems.size() == 1);
    CHECK_THAT(report.problems[0], Contains(second) && Contains("checksum"));
  }
  SECTION("a shard that does not hold what the index says") {
    const fs::path dir = save(d.path(), 1, two_zero_ranks(whole));
    const fs::path other = d.path() / "other";
    auto whole2 = whole_state();
    whole2.tensors.pop_back();  // the other save has one tensor less
    const fs::path dir2 = save(other, 1, two_zero_ranks(whole2));
    fs::copy_file(dir2 / second, dir / second, fs::copy_options::overwrite_existing);
    CHECK_THAT(load_error(dir), Contains(second) && Contains("does not match"));
  }
  SECTION("one rank's pieces in another dtype: refused, not converted") {
    auto locals = two_zero_ranks(whole);
    for (auto& piece : locals[1].pieces) piece.data = piece.data.to(torch::kFloat64);
    const fs::path dir = save(d.path(), 1, locals);
    CHECK_THAT(load_error(dir), Contains(second) && Contains("holds Double, its other pieces Float"));
  }
  SECTION("an index whose pieces leave a gap") {
    const fs::path dir = save(d.path(), 1, two_zero_ranks(whole));
    Json index = Json::parse(test::read_text(dir / ckpt::kOptimizerIndexFile));
    index["tensors"]["wte.weight/exp_avg"]["pieces"][0][2] = 1;
    std::ofstream(dir / ckpt::kOptimizerIndexFile) << index.dump();
    CHECK_THAT(load_error(dir),
               Contains(ckpt::kOptimizerIndexFile) && Contains("wte.weight/exp_avg"));
    CHECK_FALSE(ckpt::verify_checkpoint(dir).ok());  // its checksum changed too
  }
}

TEST_CASE("one process stages its shard and the writer adopts it", "[ckpt][optimizer]") {
  test::TempDir d;
  const auto whole = whole_state();
  parallel::LocalCommunicator comm;
  parallel::LocalOptimizerState local{{}, whole.meta, 0, 1};
  for (const auto& [name, t] : whole.tensors) local.pieces.push_back({name, t.sizes().vec(), 0, t});

  fs::path dir;
  {
    const auto staged = ckpt::stage_optimizer_shards(d.path(), 3, comm, torch::kCPU, local);
    CHECK(fs::is_directory(ckpt::optimizer_staging_dir(d.path(), 3, ::getpid())));
    ckpt::CheckpointWriter w(d.path(), 3, util::MapEnvironment());
    ckpt::adopt_optimizer_shards(w, staged.handoff());
    dir = w.commit("h");
  }
  CHECK(ckpt::verify_checkpoint(dir).ok());
  CHECK(torch::equal(
      find(parallel::read_whole_state(*ckpt::open_saved_optimizer(dir)), "ln_f.bias/exp_avg"),
      find(whole, "ln_f.bias/exp_avg")));

  // A save that fails after staging (rank 0's writer never adopts): the staging folder goes.
  { const auto staged = ckpt::stage_optimizer_shards(d.path(), 5, comm, torch::kCPU, local); }
  for (const auto& e : fs::directory_iterator(d.path())) {
    CHECK_FALSE(util::starts_with(e.path().filename().string(), ".tmp-"));
  }
  // A run directory that cannot be created: an IoError naming it, nothing left behind.
  const auto blocker = d.write("file", "x");
  CHECK_THROWS_AS(ckpt::stage_optimizer_shards(blocker / "run", 1, comm, torch::kCPU, local),
                  util::IoError);
}

TEST_CASE("the optimizer index refuses pieces that do not tile their tensor", "[ckpt][optimizer]") {
  auto parse = [](Json pieces) {
    Json j = {{"format", 1},
              {"files", {"optimizer/a.safetensors", "optimizer/b.safetensors"}},
              {"tensors", {{"w/exp_avg", {{"shape", {2, 3}}, {"pieces", pieces}}}}},
              {"optimizer", Json::object()}};
    return ckpt::OptimizerIndex::from_json(j, "index.json");
  };
  CHECK(parse({{1, 4, 2}, {0, 0, 4}}).tensors.at("w/exp_avg").pieces.front().file ==
        0);  // sorted by offset
  CHECK_THROWS_WITH(parse({{0, 0, 4}}), Contains("index.json") && Contains("cover 4 of 6"));
  CHECK_THROWS_WITH(parse({{0, 0, 4}, {1, 3, 3}}), Contains("exactly once"));
  CHECK_THROWS_WITH(parse({{0, 0, 4}, {2, 4, 2}}), Contains("file 2 of 2"));
  CHECK_THROWS_WITH(parse({{0, 0, 4}, {0, 4, 2}}), Contains("two pieces"));
}

TEST_CASE("every rank learns of a failure on any rank, in the words of the rank that failed",
          "[ckpt][optimizer]") {
  test::TempDir d;
  const auto whole = whole_state();
  const auto locals = two_zero_ranks(whole);
  const int64_t pid = 1 << 30;  // rank 0's, in a job where every rank sees the same run directory
  const fs::path staging = ckpt::optimizer_staging_dir(d.path(), 4, pid);

  SECTION("rank 0 cannot create the staging folder") {
    ScriptedPeer comm(
        {Json{{"error", "cannot create X: the disk is full"}, {"hint", "free some space"}}.dump()});
    try {
      ckpt::stage_optimizer_shards(d.path(), 4, comm, torch::kCPU, locals[1]);
      FAIL("expected an IoError");
    } catch (const util::IoError& e) {
      CHECK_THAT(e.what(), Contains("rank 0 could not create") && Contains("the disk is full"));
      CHECK(e.hint() == "free some space");
    }
  }
  SECTION("this rank cannot see the folder: the run directory must be shared") {
    ScriptedPeer comm({Json{{"pid", pid}}.dump(), "null"});
    try {
      ckpt::stage_optimizer_shards(d.path(), 4, comm, torch::kCPU, locals[1]);
      FAIL("expected an IoError");
    } catch (const util::IoError& e) {
      CHECK_THAT(e.what(), Contains("rank 1 cannot see") && Contains(staging.string()));
      CHECK_THAT(e.hint(), Contains("filesystem that every node shares"));
    }
  }
  SECTION("rank 0 could not write its shard; this rank wrote its own") {
    fs::create_directories(staging);
    ScriptedPeer comm(
        {Json{{"pid", pid}}.dump(), Json{{"error", "cannot write S"}, {"hint", "h"}}.dump()});
    CHECK_THROWS_WITH(ckpt::stage_optimizer_shards(d.path(), 4, comm, torch::kCPU, locals[1]),
                      Contains("rank 0 could not write its shard") && Contains("cannot write S"));
  }
  SECTION("all wrote: this rank builds the same index as rank 0, and keeps nothing") {
    fs::create_directories(staging);
    const Json rank0 = ckpt::write_optimizer_shard(staging, locals[0]);
    ScriptedPeer comm({Json{{"pid", pid}}.dump(), rank0.dump()});
    const auto staged = ckpt::stage_optimizer_shards(d.path(), 4, comm, torch::kCPU, locals[1]);
    CHECK(staged.handoff().is_null());
    CHECK(fs::exists(staging / fs::path(ckpt::optimizer_shard_name(1, 2)).filename()));
  }
}
