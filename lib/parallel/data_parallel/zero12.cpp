#include "parallel/data_parallel/zero12.h"

#include <functional>
#include <optional>

#include <torch/torch.h>

#include "parallel/data_parallel/grad_reducer.h"
#include "parallel/data_parallel/shard_layout.h"
#include "parallel/data_parallel/strategy_common.h"

namespace hftrain::parallel {
namespace {

// The optimizer sees only this rank's pieces of each bucket's chunk: views of the parameters,
// or with cpu_offload copies in CPU memory that the update runs on, or with trainer.param_dtype=
// bf16 fp32 copies (the masters, sharded with the optimizer state) while the parameters hold bf16:
// the all-gather then sends bf16, and a save or a load gathers the fp32 masters whole for its scope.
class ZeroStrategy final : public ShardingStrategy {
 public:
  ZeroStrategy(World& world, const StrategyOptions& so, const optim::NamedParams& params, int stage)
      : comm_(world.data_parallel()),
        stage_(stage),
        offload_(so.distributed.cpu_offload),
        bf16_(so.bf16_params),
        params_(tensors_of(params)) {
    broadcast_parameters(comm_, params);
    std::vector<int64_t> numels;
    for (const auto& p : params_) numels.push_back(p.numel());
    const auto dtype = so.reduce_dtype;
    const optim::StateBlocks blocks = so.state_blocks;
    auto buckets = plan_buckets(numels, static_cast<int64_t>(c10::elementSize(dtype)), so.distributed.bucket_size,
                                comm_.size(), blocks.block);
    // Both stages reduce-scatter (each rank steps only with its chunk): the communication of an
    // all-reduce halved. zero1 keeps its full gradients until the step ends.
    reducer_ = std::make_unique<GradReducer>(comm_, params_, buckets, GradReducer::Mode::kReduceScatter, dtype,
                                             /*release_grads=*/stage == 2);
    layout_ = std::make_unique<ShardLayout>(reducer_->buckets(), comm_.rank(), names_of(params), shapes_of(params),
                                            blocks);
    // Every parameter gets a piece, empty where this rank owns none of it, so that the optimizer's
    // groups (matched by name) are the same on every rank.
    optim::NamedParams shard;
    torch::NoGradGuard no_grad;
    for (size_t b = 0; b < reducer_->buckets().size(); ++b) {
      const auto& bucket = reducer_->buckets()[b];
      auto options = params_[bucket.entries.front().param].options();
      if (bf16_) options = options.dtype(torch::kBFloat16);  // what the parameters will hold
      owns_.push_back(torch::zeros({bucket.chunk()}, options));
      if (offload_) host_masters_.push_back(offload_copy(owns_.back()));
      if (dtype != options.dtype().toScalarType()) fulls_.push_back(torch::empty({bucket.padded_numel}, options));
    }
    for (size_t i = 0; i < params_.size(); ++i) {
      auto flat = params_[i].detach().view(-1);
      const ShardPiece* piece = layout_->piece_of(i);
      views_.push_back(piece ? flat.narrow(0, piece->param_offset, piece->numel) : flat.narrow(0, 0, 0));
      if (offload_ && piece) {
        // The offloaded masters are views of their bucket's host chunk: one copy sends it back.
        masters_.push_back(host_masters_[piece->bucket].narrow(0, piece->chunk_offset, piece->numel));
        masters_.back().copy_(views_.back());
      } else if (bf16_) {
        masters_.push_back(views_.back().clone());  // this rank's fp32 piece, its own memory
      } else {
        masters_.push_back(offload_ ? offload_copy(views_.back()) : views_.back());
      }
      shard.emplace_back(params[i].first, masters_.back());
    }
    if (bf16_) {
      // The parameters in bf16 (the fp32 storage goes with the last view of it).
      for (size_t i = 0; i < params_.size(); ++i) {
        params_[i].set_data(params_[i].detach().to(torch::kBFloat16));
        const ShardPiece* piece = layout_->piece_of(i);
        auto flat = params_[i].detach().view(-1);
        views_[i] = piece ? flat.narrow(0, piece->param_offset, piece->numel) : flat.narrow(0, 0, 0);
      }
    }
    optimizer_ = so.make_optimizer(shard, numels);
  }

  std::string name() const override { return stage_ == 1 ? "zero1" : "zero2"; }
  void before_backward(bool last) override {
    if (last) reducer_->arm();
  }
  void after_backward() override {
    reducer_->finish();
    grad_chunks_.clear();
    for (size_t b = 0; b < reducer_->buckets().size(); ++b) {
      const torch::Tensor& c = reducer_->chunk(b);
      grad_chunks_.push_back(c.scalar_type() == torch::kFloat32 ? c : c.to(torch::kFloat32));
    }
  }
  std::vector<torch::Tensor> grads() override { return grad_chunks_; }
  // Per element of each bucket's chunk: the weight of the parameter its piece belongs to (padding 0).
  std::vector<torch::Tensor> norm_weights(const std::vector<double>& per_parameter) override {
    if (chunk_weights_.empty()) chunk_weights_ = chunk_norm_weights(*layout_, grad_chunks_, per_parameter);
    return chunk_weights_;
  }
  Communicator* shard_comm() override { return &comm_; }

  void step() override {
    torch::NoGradGuard no_grad;
    // The (unscaled, clipped) gradient chunks onto the pieces the optimizer updates.
    if (offload_) copy_to_host(grad_chunks_, host_grads_);
    const std::vector<torch::Tensor>& chunks = offload_ ? host_grads_ : grad_chunks_;
    for (const auto& piece : layout_->pieces()) {
      masters_[piece.param].mutable_grad() = chunks[piece.bucket].narrow(0, piece.chunk_offset, piece.numel);
    }
    optimizer_->step();
    publish_masters();
  }
  // Every rank switches its pieces; when they changed, every rank publishes them (collective).
  // Called before every step: nothing at all unless the optimizer keeps two points and the mode
  // really flips (every rank makes the same calls, so they agree on that without talking).
  void hold_weights_for(optim::Optimizer::Use use) override {
    if (!optimizer_->keeps_two_points() || held_for_ == use) return;
    held_for_ = use;
    bool changed = optimizer_->hold_weights_for(use);
    // A rank whose pieces have no state changes nothing, but the gather is collective: agree first.
    if (comm_.size() > 1)
      changed = all_reduce_value(comm_, changed ? 1 : 0, ReduceOp::kMax, params_.front().device()) > 0;
    if (!changed) return;
    torch::NoGradGuard no_grad;
    publish_masters();
  }
  // All-gathers the updated pieces, every bucket in flight at once, into the buffers allocated at
  // start: this rank's chunk, and the bucket's flat buffer (free now that the gradients are used)
  // or, when that holds another dtype, a buffer of the parameters' own; then into the parameters.
  void publish_masters() {
    const auto& buckets = reducer_->buckets();
    std::vector<torch::Tensor> wholes;
    for (size_t b = 0; b < buckets.size(); ++b) {
      if (offload_) owns_[b].copy_(host_masters_[b], /*non_blocking=*/true);  // pinned: queued, not waited for
      wholes.push_back(gathered(b));
    }
    gather_chunks(owns_, wholes, /*fill=*/!offload_, [&](size_t b) {
      for (const auto& e : buckets[b].entries) params_[e.param].view(-1).copy_(wholes[b].narrow(0, e.offset, e.numel));
    });
  }
  // Each bucket's chunk (filled with this rank's pieces of the masters when `fill`) all-gathered
  // into `wholes`, every bucket in flight at once; `take(b)` as bucket b arrives.
  void gather_chunks(const std::vector<torch::Tensor>& chunks, std::vector<torch::Tensor>& wholes, bool fill,
                     const std::function<void(size_t)>& take) {
    if (fill) {
      for (const auto& piece : layout_->pieces()) {
        chunks[piece.bucket].narrow(0, piece.chunk_offset, piece.numel).copy_(masters_[piece.param]);
      }
    }
    std::vector<WorkPtr> works;
    for (size_t b = 0; b < chunks.size(); ++b) works.push_back(comm_.all_gather(wholes[b], chunks[b]));
    for (size_t b = 0; b < chunks.size(); ++b) {
      works[b]->wait();
      take(b);
    }
  }
  void zero_grad() override {
    for (auto& p : params_) p.mutable_grad() = torch::Tensor();
    for (auto& m : masters_) m.mutable_grad() = torch::Tensor();
    grad_chunks_.clear();
  }
  optim::Optimizer& optimizer() override { return *optimizer_; }

  // Every rank holds a different shard: each writes its own file.
  LocalOptimizerState local_optimizer_state() override {
    optim::OptimizerState state = optimizer_->state();
    return {layout_->pieces_of(state), std::move(state.meta), comm_.rank(), comm_.size()};
  }
  void load_optimizer_state(const SavedOptimizerState& saved) override {
    optimizer_->load_state(layout_->read(saved));
    held_for_.reset();  // the loaded state says which weights the pieces hold
  }
  bool keeps_fp32_masters() const override { return bf16_; }
  // bf16: the parameters hold the fp32 masters whole for the scope, gathered from every rank's
  // pieces (collective; every rank, as the bf16 gather of a step).
  void gather_parameters(WholeAccess /*access*/, bool /*main*/) override {
    if (!bf16_) return;
    torch::NoGradGuard no_grad;
    const auto& buckets = reducer_->buckets();
    std::vector<torch::Tensor> wholes, mine;
    for (size_t b = 0; b < buckets.size(); ++b) {
      const auto f32 = owns_[b].options().dtype(torch::kFloat32);
      mine.push_back(torch::zeros({buckets[b].chunk()}, f32));
      wholes.push_back(torch::empty({buckets[b].padded_numel}, f32));
    }
    gather_chunks(mine, wholes, /*fill=*/true, [&](size_t b) {
      for (const auto& e : buckets[b].entries) {
        torch::Tensor& p = params_[e.param];
        bf16_data_.emplace_back(e.param, p.data());
        p.set_data(wholes[b].narrow(0, e.offset, e.numel).view(p.sizes()));
      }
    });
  }
  // The pieces follow parameters loaded after construction (resume); bf16: the masters from the
  // loaded fp32 values, the parameters back to their bf16 copies rounded from them.
  void release_parameters(WholeAccess access) override {
    torch::NoGradGuard no_grad;
    if (bf16_) {
      for (auto& [i, data] : bf16_data_) {
        if (access == WholeAccess::kLoad) {
          const ShardPiece* piece = layout_->piece_of(i);
          if (piece) masters_[i].copy_(params_[i].detach().view(-1).narrow(0, piece->param_offset, piece->numel));
          data.copy_(params_[i].detach());
        }
        params_[i].set_data(data);
      }
      bf16_data_.clear();
      return;
    }
    if (!offload_ || access != WholeAccess::kLoad) return;
    for (size_t i = 0; i < masters_.size(); ++i) masters_[i].copy_(views_[i]);
  }

  MemoryReport memory() const override {
    MemoryReport m;
    for (const auto& p : params_) m.parameters += bytes_of(p);
    if (stage_ == 1) {
      m.gradients = m.parameters;  // every rank accumulates full gradients
    } else {
      for (size_t b = 0; b < reducer_->buckets().size(); ++b) m.gradients += bytes_of(reducer_->chunk(b));
    }
    m.optimizer_state = state_bytes(*optimizer_);
    if (bf16_) {
      for (const auto& t : masters_) m.optimizer_state += bytes_of(t);  // counted there by the formula
    }
    m.buffers = reducer_->buffer_bytes();
    for (const auto& t : owns_) m.buffers += bytes_of(t);
    for (const auto& t : fulls_) m.buffers += bytes_of(t);
    if (offload_) {
      // The optimizer state, and the fp32 pieces it updates (a buffer: the masters stay on the device).
      for (const auto& t : host_masters_) m.buffers += bytes_of(t), m.host += bytes_of(t);
      m.host += m.optimizer_state;
    }
    return m;
  }

 private:
  Communicator& comm_;
  int stage_;
  bool offload_;
  bool bf16_;  // trainer.param_dtype=bf16: masters_ are fp32 copies, the parameters bf16
  std::vector<std::pair<size_t, torch::Tensor>> bf16_data_;  // bf16: the parameters' data outside a whole scope
  // The use hold_weights_for last set; unknown at first and after a load.
  std::optional<optim::Optimizer::Use> held_for_;
  std::vector<torch::Tensor> params_;
  std::unique_ptr<GradReducer> reducer_;
  std::unique_ptr<ShardLayout> layout_;
  std::vector<torch::Tensor> views_;        // per parameter: this rank's piece, a view of the parameter
  std::vector<torch::Tensor> masters_;      // what the optimizer updates: views_, or (offload) views of host_masters_
  std::vector<torch::Tensor> host_masters_;  // offload, per bucket: this rank's chunk in (pinned) CPU memory
  std::vector<torch::Tensor> host_grads_;    // offload, per bucket: its gradient chunk copied there
  std::vector<torch::Tensor> grad_chunks_;  // per bucket: this rank's summed gradient chunk (fp32)
  std::vector<torch::Tensor> chunk_weights_;  // norm_weights(), made once (tensor parallelism only)
  std::unique_ptr<optim::Optimizer> optimizer_;
  std::vector<torch::Tensor> owns_;   // per bucket: this rank's updated chunk, sent by the all-gather
  std::vector<torch::Tensor> fulls_;  // per bucket: the gathered parameters, only when the reduce dtype differs

  torch::Tensor& gathered(size_t b) { return fulls_.empty() ? reducer_->scratch(b) : fulls_[b]; }
};

}  // namespace

std::unique_ptr<ShardingStrategy> make_zero12_strategy(World& world, const StrategyOptions& so,
                                                       const optim::NamedParams& params, int stage) {
  return std::make_unique<ZeroStrategy>(world, so, params, stage);
}

}  // namespace hftrain::parallel
