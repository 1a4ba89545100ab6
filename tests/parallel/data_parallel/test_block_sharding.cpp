// adamw_8bit under the ZeRO strategies (grad_buckets.h, shard_layout.h, optim::state_blocks): the
// buckets aligned to its 256-element blocks cut every parameter on a block boundary; the optimizer
// over each rank's flat pieces steps exactly as over the whole parameters (8-bit or fp32 moments
// chosen by the whole parameter's size); its state, pieces and per-block scales alike, goes from
// the pieces into the whole tensors and back out of a whole state into any other layout.
#include "../../torch_catch.h"  // first: see the file

#include <map>

#include "optim/optimizer.h"
#include "parallel/data_parallel/grad_buckets.h"
#include "parallel/data_parallel/shard_layout.h"

using namespace hftrain;

namespace {

constexpr int64_t kBlock = 256;

// Sizes around the block and min_8bit_size (4096): a partial last block, parameters under 4096
// (fp32 moments), one of exactly 4096, one that is a whole number of blocks.
const std::vector<std::string> kNames = {"wte.weight", "h.0.attn.weight", "h.0.attn.bias",
                                         "h.0.mlp.weight", "h.0.ln.weight", "h.1.mlp.weight"};
const std::vector<std::vector<int64_t>> kShapes = {{83, 61}, {48, 100}, {300}, {64, 64}, {64}, {40, 128}};

config::OptimizerConfig adamw_8bit() {
  config::OptimizerConfig c;
  c.name = config::OptimizerName::kAdamW8bit;
  c.lr = 0.01;
  c.weight_decay = 0.1;
  c.eps = 1e-8;
  c.no_decay = {"*.bias", "*.ln.weight"};
  return c;
}

std::vector<int64_t> numels() {
  std::vector<int64_t> out;
  for (const auto& s : kShapes) out.push_back(c10::multiply_integers(s));
  return out;
}

torch::Tensor values(int64_t n, double phase, double scale) {
  return (torch::sin(torch::arange(n, torch::kFloat64) * 0.37 + phase) * scale).to(torch::kFloat32);
}

// The whole parameters, and the gradients of step `step`.
optim::NamedParams whole_params() {
  optim::NamedParams params;
  for (size_t i = 0; i < kNames.size(); ++i) {
    params.emplace_back(kNames[i], values(numels()[i], 1.0 + static_cast<double>(i), 0.5).reshape(kShapes[i]));
  }
  return params;
}
torch::Tensor grad_of(size_t i, int step) {
  return values(numels()[i], 0.3 * static_cast<double>(step) + static_cast<double>(i), 1.0 + step).reshape(kShapes[i]);
}

// One simulated rank: its layout, its pieces (1-D, as the strategies hand them over) and an
// optimizer over them.
struct Rank {
  parallel::ShardLayout layout;
  optim::NamedParams pieces;
  std::unique_ptr<optim::Optimizer> optimizer;
};

parallel::ShardLayout layout_of(int world, int rank, int64_t bucket_bytes) {
  const auto blocks = optim::state_blocks(adamw_8bit());
  return {parallel::plan_buckets(numels(), 4, bucket_bytes, world, blocks.block), rank, kNames, kShapes, blocks};
}

std::vector<Rank> make_ranks(int world, int64_t bucket_bytes, const optim::NamedParams& from) {
  std::vector<Rank> ranks;
  for (int r = 0; r < world; ++r) {
    Rank rank{layout_of(world, r, bucket_bytes), {}, nullptr};
    for (size_t i = 0; i < kNames.size(); ++i) {
      const parallel::ShardPiece* piece = rank.layout.piece_of(i);
      auto flat = from[i].second.reshape(-1);
      rank.pieces.emplace_back(kNames[i], piece ? flat.narrow(0, piece->param_offset, piece->numel).clone()
                                                : flat.narrow(0, 0, 0).clone());
    }
    rank.optimizer = optim::make_optimizer(adamw_8bit(), rank.pieces, numels());
    ranks.push_back(std::move(rank));
  }
  return ranks;
}

void step_whole(optim::Optimizer& opt, optim::NamedParams& params, int step) {
  for (size_t i = 0; i < params.size(); ++i) params[i].second.mutable_grad() = grad_of(i, step);
  opt.step();
}

void step_ranks(std::vector<Rank>& ranks, int step) {
  for (auto& rank : ranks) {
    for (size_t i = 0; i < kNames.size(); ++i) {
      const parallel::ShardPiece* piece = rank.layout.piece_of(i);
      rank.pieces[i].second.mutable_grad() =
          piece ? grad_of(i, step).reshape(-1).narrow(0, piece->param_offset, piece->numel).clone() : torch::Tensor();
    }
    rank.optimizer->step();
  }
}

// The ranks' pieces put together into the whole parameters.
std::vector<torch::Tensor> gathered_params(const std::vector<Rank>& ranks) {
  std::vector<torch::Tensor> out;
  for (size_t i = 0; i < kNames.size(); ++i) out.push_back(torch::full({numels()[i]}, NAN));
  for (const auto& rank : ranks) {
    for (size_t i = 0; i < kNames.size(); ++i) {
      if (const parallel::ShardPiece* piece = rank.layout.piece_of(i)) {
        out[i].narrow(0, piece->param_offset, piece->numel).copy_(rank.pieces[i].second);
      }
    }
  }
  return out;
}

// The ranks' pieces put together equal the whole parameters bit for bit.
void check_same_params(const std::vector<Rank>& ranks, const optim::NamedParams& whole) {
  const auto params = gathered_params(ranks);
  for (size_t i = 0; i < kNames.size(); ++i) {
    INFO(kNames[i]);
    CHECK(torch::equal(params[i], whole[i].second.reshape(-1)));
  }
}

// The ranks' state pieces (as each rank saves them) put together into whole tensors, by name.
std::map<std::string, torch::Tensor> gathered_state(const std::vector<Rank>& ranks) {
  std::map<std::string, torch::Tensor> out;
  for (const auto& rank : ranks) {
    for (const auto& piece : rank.layout.pieces_of(rank.optimizer->state())) {
      auto& whole = out[piece.name];
      if (!whole.defined()) {
        whole = torch::zeros({c10::multiply_integers(piece.shape)}, piece.data.options());
        INFO(piece.name);
        CHECK(whole.numel() > 0);
      }
      whole.narrow(0, piece.offset, piece.data.numel()).copy_(piece.data);
    }
  }
  return out;
}

// A saved state in memory: the whole tensors of one optimizer.
class SavedInMemory final : public parallel::SavedOptimizerState {
 public:
  explicit SavedInMemory(optim::OptimizerState state) : state_(std::move(state)) {}
  const nlohmann::json& meta() const override { return state_.meta; }
  std::string source() const override { return "the test's state in memory"; }
  std::vector<std::string> names() const override {
    std::vector<std::string> out;
    for (const auto& [name, t] : state_.tensors) out.push_back(name);
    return out;
  }
  std::vector<int64_t> shape(const std::string& name) const override { return find(name).sizes().vec(); }
  torch::Tensor read(const std::string& name, int64_t offset, int64_t count) const override {
    return find(name).reshape(-1).narrow(0, offset, count).clone();
  }

 private:
  const torch::Tensor& find(const std::string& name) const {
    for (const auto& [n, t] : state_.tensors) {
      if (n == name) return t;
    }
    throw std::out_of_range(name);
  }
  optim::OptimizerState state_;
};

}  // namespace

TEST_CASE("block-aligned buckets cut every parameter on a block boundary", "[dist][adamw_8bit]") {
  const auto sizes = numels();
  for (int world : {1, 2, 3, 4, 5}) {
    for (int64_t bucket_bytes : {int64_t{4}, int64_t{40000}, int64_t{1} << 20}) {
      INFO("world " << world << ", bucket " << bucket_bytes << " B");
      const auto buckets = parallel::plan_buckets(sizes, 4, bucket_bytes, world, kBlock);
      std::map<size_t, std::vector<int>> seen;
      for (size_t p = 0; p < sizes.size(); ++p) seen[p].assign(static_cast<size_t>(sizes[p]), 0);
      for (const auto& b : buckets) {
        CHECK(b.chunk() % kBlock == 0);
        for (const auto& e : b.entries) CHECK(e.offset % kBlock == 0);
        CHECK(b.padded_numel >= b.entries.back().offset + b.entries.back().numel);
      }
      for (int r = 0; r < world; ++r) {
        for (const auto& piece : parallel::shard_pieces(buckets, r)) {
          CHECK(piece.param_offset % kBlock == 0);
          for (int64_t i = 0; i < piece.numel; ++i) ++seen[piece.param][static_cast<size_t>(piece.param_offset + i)];
        }
      }
      for (const auto& [p, counts] : seen) {
        for (int c : counts) CHECK(c == 1);
      }
    }
  }
  // Without an alignment the layout is as before: entries back to back.
  const auto plain = parallel::plan_buckets({10, 7}, 4, 1 << 20, 3);
  CHECK(plain[0].entries[1].offset == 7);
  CHECK(plain[0].padded_numel == 18);
}

TEST_CASE("adamw_8bit over ZeRO pieces steps as over whole parameters, and its state reshards exactly",
          "[dist][adamw_8bit][state]") {
  auto whole = whole_params();
  auto reference = optim::make_optimizer(adamw_8bit(), whole);
  const auto start = whole_params();
  // Buckets of 8 KiB: several buckets, and parameters cut across ranks mid-way.
  constexpr int64_t kBucketBytes = 8192;
  auto ranks = make_ranks(3, kBucketBytes, start);

  // A piece decides 8-bit or fp32 moments by its whole parameter: a piece of h.0.attn.weight
  // smaller than 4096 keeps codes and scales; the bias (300) and the norm (64) keep fp32 moments.
  step_whole(*reference, whole, 0);
  step_ranks(ranks, 0);
  bool small_piece_8bit = false;
  for (const auto& rank : ranks) {
    const parallel::ShardPiece* piece = rank.layout.piece_of(1);
    if (!piece || piece->numel >= 4096) continue;
    for (const auto& [name, t] : rank.optimizer->state().tensors) small_piece_8bit |= name == "h.0.attn.weight/state1";
  }
  CHECK(small_piece_8bit);

  for (int step = 1; step < 4; ++step) {
    step_whole(*reference, whole, step);
    step_ranks(ranks, step);
  }
  check_same_params(ranks, whole);

  // The pieces each rank saves make the whole state, the per-block scales included.
  const optim::OptimizerState want = reference->state();
  const auto state = gathered_state(ranks);
  REQUIRE(state.size() == want.tensors.size());
  for (const auto& [name, t] : want.tensors) {
    INFO(name);
    REQUIRE(state.count(name) == 1);
    CHECK(torch::equal(state.at(name), t.reshape(-1)));
  }

  // The whole state read into another layout (2 ranks, one bucket each parameter) continues as
  // the whole optimizer does, bit for bit.
  auto resumed = make_ranks(2, 4, whole);  // the parameters: equal to the pieces (checked above)
  const SavedInMemory saved(want);
  for (auto& rank : resumed) rank.optimizer->load_state(rank.layout.read(saved));
  for (int step = 4; step < 7; ++step) {
    step_whole(*reference, whole, step);
    step_ranks(resumed, step);
  }
  check_same_params(resumed, whole);
}

TEST_CASE("a saved scale tensor of the wrong size is refused by name", "[dist][adamw_8bit][state]") {
  auto whole = whole_params();
  auto opt = optim::make_optimizer(adamw_8bit(), whole);
  step_whole(*opt, whole, 0);
  optim::OptimizerState state = opt->state();
  for (auto& [name, t] : state.tensors) {
    if (name == "wte.weight/absmax1") t = torch::zeros({t.numel() + 1});
  }
  const SavedInMemory saved(state);
  CHECK_THROWS_WITH(layout_of(2, 0, 8192).read(saved),
                    Catch::Matchers::Contains("wte.weight/absmax1") && Catch::Matchers::Contains("blocks"));
}
