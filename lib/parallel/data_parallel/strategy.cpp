#include "parallel/data_parallel/strategy.h"

#include <optional>
#include <set>
#include <string>

#include <torch/torch.h>

#include "parallel/data_parallel/grad_buckets.h"
#include "parallel/data_parallel/grad_reducer.h"
#include "parallel/data_parallel/param_partition.h"
#include "parallel/plan/memory_plan.h"
#include "parallel/data_parallel/strategy_common.h"
#include "parallel/data_parallel/zero12.h"
#include "parallel/data_parallel/zero3.h"
#include "util/error.h"

namespace hftrain::parallel {


std::vector<torch::Tensor> tensors_of(const optim::NamedParams& params) {
  std::vector<torch::Tensor> out;
  for (const auto& [name, p] : params) out.push_back(p);
  return out;
}

std::vector<std::string> names_of(const optim::NamedParams& params) {
  std::vector<std::string> out;
  for (const auto& [name, p] : params) out.push_back(name);
  return out;
}

std::vector<std::vector<int64_t>> shapes_of(const optim::NamedParams& params) {
  std::vector<std::vector<int64_t>> out;
  for (const auto& [name, p] : params) out.push_back(p.sizes().vec());
  return out;
}

void broadcast_from(Communicator& comm, const std::vector<torch::Tensor>& tensors, const std::vector<int>& roots) {
  torch::NoGradGuard no_grad;
  std::vector<WorkPtr> works;
  std::vector<torch::Tensor> views;
  for (size_t i = 0; i < tensors.size(); ++i) {
    views.push_back(tensors[i].detach());
    works.push_back(comm.broadcast(views.back(), roots[i]));
  }
  wait_all(works);
}

void broadcast_parameters(Communicator& comm, const optim::NamedParams& params) {
  broadcast_from(comm, tensors_of(params), std::vector<int>(params.size(), 0));
}

torch::Tensor offload_copy(const torch::Tensor& t) {
  auto out = torch::empty(t.sizes(), t.options().device(torch::kCPU).pinned_memory(t.is_cuda()));
  out.copy_(t);
  return out;
}

std::vector<torch::Tensor> chunk_norm_weights(const ShardLayout& layout, const std::vector<torch::Tensor>& chunks,
                                              const std::vector<double>& per_parameter) {
  std::vector<torch::Tensor> out;
  for (const auto& c : chunks) out.push_back(torch::zeros({c.numel()}, torch::kFloat32));
  for (const auto& piece : layout.pieces()) {
    out[piece.bucket].narrow(0, piece.chunk_offset, piece.numel).fill_(per_parameter.at(piece.param));
  }
  for (size_t i = 0; i < out.size(); ++i) out[i] = out[i].to(chunks[i].device());
  return out;
}

void copy_to_host(const std::vector<torch::Tensor>& chunks, std::vector<torch::Tensor>& host) {
  host.resize(chunks.size());
  std::optional<c10::DeviceIndex> device;
  for (size_t i = 0; i < chunks.size(); ++i) {
    const torch::Tensor& c = chunks[i];
    if (!c.is_cuda()) {
      host[i] = c;
      continue;
    }
    if (!host[i].defined() || host[i].sizes() != c.sizes() || host[i].scalar_type() != c.scalar_type()) {
      host[i] = torch::empty(c.sizes(), c.options().device(torch::kCPU).pinned_memory(true));
    }
    host[i].copy_(c, /*non_blocking=*/true);
    device = c.device().index();
  }
  if (device) torch::cuda::synchronize(*device);
}

namespace {

// single (one process) and ddp: every rank holds and updates every parameter. With
// `partition_state` (zero1 for optimizers whose state is not element-wise, param_partition.h),
// every rank still holds every parameter and gradient, but steps only the parameters it owns and
// broadcasts them.
class ReplicatedStrategy final : public ShardingStrategy {
 public:
  ReplicatedStrategy(World& world, const StrategyOptions& options, const optim::NamedParams& params,
                     bool partition_state = false)
      : rank_(world.dp_rank()), world_size_(world.dp_size()), comm_(&world.data_parallel()),
        params_(tensors_of(params)), optimizer_(options.make_optimizer(params, {})) {
    if (world_size_ > 1) {
      broadcast_parameters(*comm_, params);
      std::vector<int64_t> numels;
      for (const auto& p : params_) numels.push_back(p.numel());
      const auto dtype = options.reduce_dtype;
      reducer_ = std::make_unique<GradReducer>(
          *comm_, params_,
          plan_buckets(numels, static_cast<int64_t>(c10::elementSize(dtype)), options.distributed.bucket_size, 1),
          GradReducer::Mode::kAllReduce, dtype);
      if (partition_state) {
        owners_ = partition_by_size(numels, world_size_);
        for (size_t i = 0; i < params.size(); ++i) {
          if (owners_[i] == rank_) owned_.insert(params[i].first);
        }
      }
    }
  }
  std::string name() const override { return !owners_.empty() ? "zero1" : reducer_ ? "ddp" : "single"; }
  void before_backward(bool last) override {
    if (reducer_ && last) reducer_->arm();
  }
  void after_backward() override {
    if (reducer_) reducer_->finish();
  }
  std::vector<torch::Tensor> grads() override {
    std::vector<torch::Tensor> out;
    for (const auto& p : params_) {
      if (p.grad().defined()) out.push_back(p.grad());
    }
    return out;
  }
  Communicator* shard_comm() override { return nullptr; }
  std::vector<torch::Tensor> norm_weights(const std::vector<double>& per_parameter) override {
    std::vector<torch::Tensor> out;
    for (size_t i = 0; i < params_.size(); ++i) {
      if (params_[i].grad().defined()) out.push_back(torch::scalar_tensor(per_parameter.at(i), torch::kFloat32));
    }
    return out;
  }
  void step() override {
    if (owners_.empty()) {
      optimizer_->step();
      return;
    }
    // The optimizer skips a parameter without a gradient: it sees only this rank's.
    std::vector<torch::Tensor> held(params_.size());
    for (size_t i = 0; i < params_.size(); ++i) {
      if (owners_[i] != rank_) std::swap(held[i], params_[i].mutable_grad());
    }
    optimizer_->step();
    for (size_t i = 0; i < params_.size(); ++i) {
      if (held[i].defined()) params_[i].mutable_grad() = std::move(held[i]);
    }
    broadcast_from(*comm_, params_, owners_);
  }
  void zero_grad() override { optimizer_->zero_grad(); }
  optim::Optimizer& optimizer() override { return *optimizer_; }
  // Every rank holds the same whole state: rank 0 alone writes it, in one file. Partitioned, each
  // rank writes the whole state tensors of the parameters it owns, in a file of its own.
  LocalOptimizerState local_optimizer_state() override {
    optim::OptimizerState state = optimizer_->state();
    const bool partitioned = !owners_.empty();
    LocalOptimizerState out{{}, std::move(state.meta), partitioned ? rank_ : rank_ == 0 ? 0 : -1,
                            partitioned ? world_size_ : 1};
    for (auto& [name, t] : state.tensors) {
      out.pieces.push_back({name, t.sizes().vec(), 0, partitioned ? t.reshape(-1) : t});
    }
    return out;
  }
  void load_optimizer_state(const SavedOptimizerState& saved) override {
    optim::OptimizerState whole = read_whole_state(saved);
    optimizer_->load_state(owners_.empty() ? whole : only_owned(std::move(whole), owned_));
  }
  MemoryReport memory() const override {
    MemoryReport m;
    for (const auto& p : params_) m.parameters += bytes_of(p), m.gradients += bytes_of(p);
    m.optimizer_state = state_bytes(*optimizer_);
    m.buffers = reducer_ ? reducer_->buffer_bytes() : 0;
    return m;
  }

 private:
  int rank_;
  int world_size_;
  Communicator* comm_;
  std::vector<torch::Tensor> params_;
  std::unique_ptr<optim::Optimizer> optimizer_;
  std::unique_ptr<GradReducer> reducer_;
  std::vector<int> owners_;     // partitioned: the rank that steps each parameter; else empty
  std::set<std::string> owned_;  // partitioned: the names of this rank's parameters
};

}  // namespace

namespace {

std::unique_ptr<ShardingStrategy> make_strategy(World& world, const StrategyOptions& options,
                                                const optim::NamedParams& params, const model::ParameterUnits& units) {
  using config::Strategy;
  const Strategy s = options.distributed.strategy;
  const bool offload = options.distributed.cpu_offload;
  if (s == Strategy::kDdp || (world.dp_size() == 1 && !offload)) {
    if (offload) {
      throw util::ConfigError(
          "distributed.cpu_offload needs a zero strategy: ddp keeps the optimizer state on every rank",
          "use distributed.strategy=zero1, zero2, zero3 or hybrid, or distributed.cpu_offload=false");
    }
    return std::make_unique<ReplicatedStrategy>(world, options, params);
  }
  // Optimizers whose state is neither element-wise nor block-wise (adamw_8bit's scales, which
  // the chunks follow: optim::state_blocks) cannot follow flat chunks: zero1 partitions their
  // state by whole parameters instead (param_partition.h); the other strategies split matrices.
  if (!options.whole_state.empty()) {
    if (s == Strategy::kZero1 && !offload) {
      return std::make_unique<ReplicatedStrategy>(world, options, params, /*partition_state=*/true);
    }
    const std::string what =
        offload ? "distributed.cpu_offload, which keeps flat pieces of every parameter"
                : "distributed.strategy=" + strategy_name(s) + ", which splits parameters across ranks";
    throw util::ConfigError("optimizer.name=" + options.whole_state + ": that does not go with " + what,
                            "use distributed.strategy=zero1 (its state partitioned by whole parameters) or ddp, "
                            "without distributed.cpu_offload; or optimizer.name=adamw");
  }
  switch (s) {
    case Strategy::kZero1: return make_zero12_strategy(world, options, params, 1);
    case Strategy::kZero2: return make_zero12_strategy(world, options, params, 2);
    case Strategy::kZero3: return make_zero3_strategy(world, options, params, units, /*hybrid=*/false);
    case Strategy::kHybrid: return make_zero3_strategy(world, options, params, units, /*hybrid=*/true);
    case Strategy::kDdp: break;
  }
  return std::make_unique<ReplicatedStrategy>(world, options, params);
}

}  // namespace

std::unique_ptr<ShardingStrategy> ShardingStrategy::create(World& world, const StrategyOptions& options,
                                                           const optim::NamedParams& params,
                                                           const model::ParameterUnits& units) {
  std::unique_ptr<ShardingStrategy> strategy = make_strategy(world, options, params, units);
  strategy->options_ = options;
  return strategy;
}

}  // namespace hftrain::parallel
