#include "parallel/data_parallel/zero3.h"

#include <array>
#include <deque>

#include <torch/torch.h>

#include "parallel/data_parallel/grad_hook.h"
#include "parallel/data_parallel/grad_reducer.h"
#include "parallel/plan/memory_plan.h"

#include "parallel/data_parallel/shard_layout.h"
#include "parallel/data_parallel/strategy_common.h"
#include "parallel/data_parallel/unit_storage.h"
#include "util/error.h"

namespace hftrain::parallel {
namespace {

class Zero3Strategy final : public ShardingStrategy, public model::UnitHooks {
 public:
  Zero3Strategy(World& world, const StrategyOptions& so, const optim::NamedParams& params,
                const model::ParameterUnits& units, bool hybrid)
      : shards_(hybrid ? world.intra_node() : world.data_parallel()),
        hybrid_(hybrid),
        offload_(so.distributed.cpu_offload),
        reduce_dtype_(so.reduce_dtype),
        params_(tensors_of(params)) {
    broadcast_parameters(world.data_parallel(), params);
    if (hybrid && world.inter_node().size() > 1) replicas_ = &world.inter_node();
    const int n = shards_.size();
    std::vector<Bucket> groups;
    const optim::StateBlocks blocks = so.state_blocks;
    unit_of_.assign(params_.size(), 0);
    for (size_t u = 0; u < units.size(); ++u) {
      Bucket g;
      g.world_size = n;
      g.align = blocks.block;
      for (size_t i : units[u]) {
        g.append(i, params_[i].numel());
        unit_of_[i] = u;
      }
      g.pad();
      groups.push_back(std::move(g));
    }
    layout_ = std::make_unique<ShardLayout>(groups, shards_.rank(), names_of(params), shapes_of(params), blocks);

    torch::NoGradGuard no_grad;
    const auto options = params_.front().options();
    for (size_t u = 0; u < groups.size(); ++u) {
      const Bucket& g = groups[u];
      Unit unit;
      unit.full = torch::zeros({g.padded_numel}, options);
      for (const auto& e : g.entries) {
        auto view = unit.full.narrow(0, e.offset, e.numel);
        view.copy_(params_[e.param].detach().reshape(-1));
        params_[e.param].set_data(view.view(params_[e.param].sizes()));
      }
      auto own = unit.full.narrow(0, shards_.rank() * g.chunk(), g.chunk());
      unit.shard = offload_ ? offload_copy(own) : own.clone();
      if (offload_) unit.send = torch::empty({g.chunk()}, options);
      unit.grad = torch::zeros({g.chunk()}, options.dtype(torch::kFloat32));
      free_storage(unit.full);
      units_.push_back(std::move(unit));
    }
    // The optimizer updates this rank's piece of every parameter (empty where it holds none, so
    // that the groups, matched by name, are the same on every rank).
    optim::NamedParams pieces;
    std::vector<int64_t> whole_numels;
    for (size_t i = 0; i < params_.size(); ++i) {
      whole_numels.push_back(params_[i].numel());
      const ShardPiece* piece = layout_->piece_of(i);
      const Unit& unit = units_[unit_of_[i]];
      pieces_.push_back(piece ? unit.shard.narrow(0, piece->chunk_offset, piece->numel) : unit.shard.narrow(0, 0, 0));
      pieces.emplace_back(params[i].first, pieces_.back());
    }
    optimizer_ = so.make_optimizer(pieces, whole_numels);
    // Backward order: the blocks from the last, then the root.
    for (size_t u = units_.size(); u-- > 1;) order_.push_back(u);
    order_.push_back(0);
    pending_.assign(units_.size(), 0);
    reduced_.assign(units_.size(), true);
    accumulators_.resize(params_.size());
    for (size_t i = 0; i < params_.size(); ++i) hook_gradient(i);
  }

  std::string name() const override { return hybrid_ ? "hybrid" : "zero3"; }
  model::UnitHooks* unit_hooks() override { return this; }

  // --- the model's calls (model::UnitHooks) ---
  void before_forward(size_t u) override {
    ensure_whole(u);
    if (u + 1 < units_.size()) prefetch(u + 1);
  }
  torch::Tensor after_forward(size_t u, const torch::Tensor& out) override {
    if (!(torch::GradMode::is_enabled() && out.requires_grad())) {
      release(u);  // no backward follows (evaluation)
      return out;
    }
    if (u == 0) {
      // The root stays whole until its gradients are reduced. A pipeline stage that runs several
      // forwards before their backwards (gpipe) finds it released by the first backward's
      // reduction: the next backward gathers it again (a no-op while it is whole).
      out.register_hook([this](const torch::Tensor&) { ensure_whole(0); });
      return out;
    }
    release(u);
    out.register_hook([this, u](const torch::Tensor&) {
      ensure_whole(u);
      if (u > 1) prefetch(u - 1);
    });
    return out;
  }

  void gather_unit(size_t u) override { ensure_whole(u); }
  void release_unit(size_t u) override { release(u); }

  // --- the training loop's calls ---
  void before_backward(bool) override {
    flush();
    for (size_t u = 0; u < units_.size(); ++u) {
      pending_[u] = 0;
      for (const auto& e : layout_->groups()[u].entries) pending_[u] += params_[e.param].requires_grad() ? 1 : 0;
      reduced_[u] = false;
    }
    next_ = 0;
  }
  void after_backward() override {
    flush();
    reduce_across_replicas();
  }
  std::vector<torch::Tensor> grads() override {
    std::vector<torch::Tensor> out;
    for (const auto& unit : units_) out.push_back(unit.grad);
    return out;
  }
  Communicator* shard_comm() override { return &shards_; }
  std::vector<torch::Tensor> norm_weights(const std::vector<double>& per_parameter) override {
    return chunk_norm_weights(*layout_, grads(), per_parameter);
  }
  void step() override {
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> chunks;
    for (const auto& unit : units_) chunks.push_back(unit.grad);
    if (offload_) copy_to_host(chunks, host_grads_);
    for (const auto& piece : layout_->pieces()) {
      const torch::Tensor& g = offload_ ? host_grads_[piece.bucket] : chunks[piece.bucket];
      pieces_[piece.param].mutable_grad() = g.narrow(0, piece.chunk_offset, piece.numel);
    }
    optimizer_->step();  // the next forward gathers the updated shards
  }
  void zero_grad() override {
    for (auto& unit : units_) unit.grad.zero_();
    for (auto& p : pieces_) p.mutable_grad() = torch::Tensor();
  }
  optim::Optimizer& optimizer() override { return *optimizer_; }
  // Each rank of the shard group writes its own file; under hybrid the other nodes hold the same
  // shards again, so only node 0's ranks write.
  LocalOptimizerState local_optimizer_state() override {
    optim::OptimizerState state = optimizer_->state();
    const bool writes = !replicas_ || replicas_->rank() == 0;
    return {layout_->pieces_of(state), std::move(state.meta), writes ? shards_.rank() : -1, shards_.size()};
  }
  void load_optimizer_state(const SavedOptimizerState& saved) override { optimizer_->load_state(layout_->read(saved)); }

  void gather_parameters(WholeAccess access, bool main) override {
    if (access == WholeAccess::kLoad) {
      for (size_t u = 0; u < units_.size(); ++u) prefetch(u);
      for (size_t u = 0; u < units_.size(); ++u) ensure_whole(u);
      return;
    }
    // kSave: one unit whole at a time (the next one in flight); the main rank's parameters point
    // at host copies until the scope ends, the views they had are kept to point them back.
    torch::NoGradGuard no_grad;
    for (size_t u = 0; u < units_.size(); ++u) {
      ensure_whole(u);
      if (u + 1 < units_.size()) prefetch(u + 1);
      if (main) {
        for (const auto& e : layout_->groups()[u].entries) {
          torch::Tensor& p = params_[e.param];
          saved_views_.emplace_back(e.param, p.data());
          p.set_data(torch::empty(p.sizes(), p.options().device(torch::kCPU)).copy_(p));
        }
      }
      release(u);
    }
  }
  void release_parameters(WholeAccess access) override {
    torch::NoGradGuard no_grad;
    if (access == WholeAccess::kSave) {
      for (auto& [i, view] : saved_views_) {
        params_[i].set_data(view);  // the unit's view again (freed)
        // A host copy on another device than the unit dropped the hooked gradient node.
        if (!is_grad_accumulator(params_[i], accumulators_[i])) hook_gradient(i);
      }
      saved_views_.clear();
      return;
    }
    for (size_t u = 0; u < units_.size(); ++u) {
      ensure_whole(u);
      const int64_t chunk = layout_->groups()[u].chunk();
      units_[u].shard.copy_(units_[u].full.narrow(0, shards_.rank() * chunk, chunk));
      release(u);
    }
  }

  MemoryReport memory() const override {
    MemoryReport m;
    UnitSizes sizes;  // the largest padded root and block, in elements
    for (size_t u = 0; u < units_.size(); ++u) {
      const Unit& unit = units_[u];
      m.parameters += bytes_of(unit.shard);
      m.gradients += bytes_of(unit.grad);
      m.buffers += bytes_of(unit.send);
      int64_t& largest = u == 0 ? sizes.root : sizes.block;
      largest = std::max(largest, unit.full.numel());
    }
    m.optimizer_state = state_bytes(*optimizer_);
    // The most the gathers and reductions hold at once (memory_plan.h, the same formula as `plan`).
    m.buffers += static_cast<int64_t>(
        zero3_buffer_bytes(sizes, shards_.size(), static_cast<int64_t>(c10::elementSize(reduce_dtype_))));
    if (offload_) m.host = m.parameters + m.optimizer_state;
    return m;
  }

 private:
  enum class State { kFree, kGathering, kWhole };
  struct Unit {
    torch::Tensor full;   // (padded,) fp32: the parameters' storage, present only while gathered
    torch::Tensor shard;  // (chunk,) fp32 master: this rank's chunk (CPU under cpu_offload)
    torch::Tensor send;   // (chunk,) on the device: the shard's copy sent by the all-gather (offload)
    torch::Tensor grad;   // (chunk,) fp32: this rank's summed gradient chunk
    State state = State::kFree;
    WorkPtr gather;
  };
  struct Reduction {
    size_t unit;
    torch::Tensor flat, chunk;
    WorkPtr work;
  };

  void prefetch(size_t u) {
    Unit& unit = units_[u];
    if (unit.state != State::kFree) return;
    torch::NoGradGuard no_grad;
    allocate_storage(unit.full);
    if (offload_) unit.send.copy_(unit.shard, /*non_blocking=*/true);  // pinned: queued before the gather
    unit.gather = shards_.all_gather(unit.full, offload_ ? unit.send : unit.shard);
    unit.state = State::kGathering;
  }
  void ensure_whole(size_t u) {
    prefetch(u);
    Unit& unit = units_[u];
    if (unit.state == State::kGathering) {
      unit.gather->wait();
      unit.gather.reset();
      unit.state = State::kWhole;
    }
  }
  void release(size_t u) {
    Unit& unit = units_[u];
    if (unit.state == State::kFree) return;
    if (unit.gather) unit.gather->wait(), unit.gather.reset();
    free_storage(unit.full);
    unit.state = State::kFree;
  }

  void hook_gradient(size_t i) {
    accumulators_[i] = after_grad_accumulated(params_[i], [this, i] { on_grad_ready(i); });
  }
  void on_grad_ready(size_t param) {
    const size_t u = unit_of_[param];
    if (--pending_[u] > 0) return;
    // Reductions go out strictly in backward order on every rank, so the collectives match.
    while (next_ < order_.size() && pending_[order_[next_]] <= 0) reduce(order_[next_++]);
  }
  void reduce(size_t u) {
    torch::NoGradGuard no_grad;
    const Bucket& g = layout_->groups()[u];
    auto [flat, chunk] = reduction_buffers(u);
    pack_gradients(g, params_, flat, /*release=*/true);
    release(u);  // the unit's backward is over
    WorkPtr work = shards_.reduce_scatter(chunk, flat, ReduceOp::kSum);
    reduced_[u] = true;
    in_flight_.push_back({u, flat, chunk, work});
    while (in_flight_.size() > 2) complete_oldest();
  }
  // A reduction's flat gradient and its chunk. Blocks take views into one of three buffers sized
  // for the largest block and reused in turn: at most two reductions are in flight when a third
  // is packed (reduce()), so the buffer taken was last used by a reduction that has completed.
  // Allocated once instead of twice per block and micro-batch; the root (embeddings, head), when
  // larger than a block, gets its own pair each time, as before, so that no buffer of its size is
  // held for the whole run.
  std::pair<torch::Tensor, torch::Tensor> reduction_buffers(size_t u) {
    const Bucket& g = layout_->groups()[u];
    const auto options = units_[u].grad.options().dtype(reduce_dtype_);
    if (!ring_flat_[0].defined()) {
      int64_t flat = 1, chunk = 1;
      const auto& groups = layout_->groups();
      for (size_t b = 1; b < groups.size(); ++b) {
        flat = std::max(flat, groups[b].padded_numel);
        chunk = std::max(chunk, groups[b].chunk());
      }
      for (size_t k = 0; k < ring_flat_.size(); ++k) {
        ring_flat_[k] = torch::empty({flat}, options);
        ring_chunk_[k] = torch::empty({chunk}, options);
      }
    }
    if (g.padded_numel > ring_flat_[0].numel() || g.chunk() > ring_chunk_[0].numel()) {
      return {torch::empty({g.padded_numel}, options), torch::empty({g.chunk()}, options)};
    }
    const size_t k = issued_++ % ring_flat_.size();
    return {ring_flat_[k].narrow(0, 0, g.padded_numel), ring_chunk_[k].narrow(0, 0, g.chunk())};
  }
  void complete_oldest() {
    Reduction r = std::move(in_flight_.front());
    in_flight_.pop_front();
    r.work->wait();
    torch::NoGradGuard no_grad;
    units_[r.unit].grad.add_(r.chunk);
  }
  // hybrid: the step's gradient chunks, accumulated over its micro-batches, summed across the
  // nodes once per step (in the reduction dtype), all units' reductions in flight together.
  void reduce_across_replicas() {
    if (!replicas_) return;
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> sums;
    std::vector<WorkPtr> works;
    for (auto& unit : units_) {
      sums.push_back(unit.grad.scalar_type() == reduce_dtype_ ? unit.grad : unit.grad.to(reduce_dtype_));
      works.push_back(replicas_->all_reduce(sums.back(), ReduceOp::kSum));
    }
    wait_all(works);
    for (size_t u = 0; u < units_.size(); ++u) {
      if (!sums[u].is_same(units_[u].grad)) units_[u].grad.copy_(sums[u]);
    }
  }
  // Completes the reductions of the last backward: units it left out (parameters it did not use
  // at all) are reduced as zeros, in order, so that every rank issues the same collectives.
  void flush() {
    for (; next_ < order_.size(); ++next_) {
      if (!reduced_[order_[next_]]) reduce(order_[next_]);
    }
    while (!in_flight_.empty()) complete_oldest();
  }

  Communicator& shards_;
  Communicator* replicas_ = nullptr;
  bool hybrid_;
  bool offload_;
  torch::ScalarType reduce_dtype_;
  std::vector<torch::Tensor> params_;
  std::vector<size_t> unit_of_;
  std::unique_ptr<ShardLayout> layout_;
  std::vector<Unit> units_;
  std::vector<torch::Tensor> pieces_;  // per parameter: this rank's piece of its unit's shard
  std::unique_ptr<optim::Optimizer> optimizer_;
  std::vector<size_t> order_;          // the units in backward order
  std::vector<int64_t> pending_;       // per unit: gradients still to come in this backward
  std::vector<bool> reduced_;
  size_t next_ = 0;                    // into order_: the next unit to reduce
  std::deque<Reduction> in_flight_;
  std::array<torch::Tensor, 3> ring_flat_, ring_chunk_;  // reduction buffers (reduction_buffers())
  uint64_t issued_ = 0;                                   // reductions issued: the ring's position
  std::vector<std::shared_ptr<void>> accumulators_;  // keeps the hooked grad accumulators alive
  std::vector<torch::Tensor> host_grads_;  // offload: the units' gradient chunks in CPU memory
  // kSave on the main rank: each parameter's view into its unit, while it points at a host copy.
  std::vector<std::pair<size_t, torch::Tensor>> saved_views_;
};

}  // namespace

std::unique_ptr<ShardingStrategy> make_zero3_strategy(World& world, const StrategyOptions& so,
                                                      const optim::NamedParams& params,
                                                      const model::ParameterUnits& units, bool hybrid) {
  return std::make_unique<Zero3Strategy>(world, so, params, units, hybrid);
}

}  // namespace hftrain::parallel
