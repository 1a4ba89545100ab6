#include "dist/strategy.h"

#include <algorithm>
#include <map>

#include <torch/torch.h>

#include "dist/grad_buckets.h"
#include "dist/grad_reducer.h"
#include "util/error.h"

namespace hftrain::dist {
namespace {

int64_t bytes_of(const torch::Tensor& t) {
  return t.defined() ? t.numel() * static_cast<int64_t>(t.element_size()) : 0;
}

int64_t state_bytes(const optim::Optimizer& optimizer) {
  int64_t bytes = 0;
  for (const auto& [name, t] : optimizer.state().tensors) bytes += bytes_of(t);
  return bytes;
}

torch::ScalarType reduce_dtype(const config::Config& c) {
  if (c.distributed.reduce_dtype == config::ReduceDtype::kFp32) return torch::kFloat32;
  switch (c.trainer.precision) {
    case config::Precision::kBf16: return torch::kBFloat16;
    case config::Precision::kFp16: return torch::kFloat16;
    case config::Precision::kFp32: break;
  }
  return torch::kFloat32;
}

std::vector<torch::Tensor> tensors_of(const optim::NamedParams& params) {
  std::vector<torch::Tensor> out;
  for (const auto& [name, p] : params) out.push_back(p);
  return out;
}

// Every rank starts from rank 0's weights (they agree already when seeded alike; this makes sure).
void broadcast_parameters(Communicator& comm, const optim::NamedParams& params) {
  torch::NoGradGuard no_grad;
  std::vector<WorkPtr> works;
  std::vector<torch::Tensor> views;
  for (const auto& [name, p] : params) {
    views.push_back(p.detach());
    works.push_back(comm.broadcast(views.back(), 0));
  }
  wait_all(works);
}

// single (one process) and ddp: every rank holds and updates every parameter.
class ReplicatedStrategy final : public ShardingStrategy {
 public:
  ReplicatedStrategy(World& world, const config::Config& config, const optim::NamedParams& params)
      : params_(tensors_of(params)), optimizer_(optim::make_optimizer(config.optimizer, params)) {
    if (world.size() > 1) {
      broadcast_parameters(world.comm(), params);
      std::vector<int64_t> numels;
      for (const auto& p : params_) numels.push_back(p.numel());
      const auto dtype = reduce_dtype(config);
      reducer_ = std::make_unique<GradReducer>(
          world.comm(), params_,
          plan_buckets(numels, static_cast<int64_t>(c10::elementSize(dtype)), config.distributed.bucket_size, 1),
          GradReducer::Mode::kAllReduce, dtype);
    }
  }
  std::string name() const override { return reducer_ ? "ddp" : "single"; }
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
  void step() override { optimizer_->step(); }
  void zero_grad() override { optimizer_->zero_grad(); }
  optim::Optimizer& optimizer() override { return *optimizer_; }
  optim::OptimizerState full_optimizer_state() override { return optimizer_->state(); }
  void load_full_optimizer_state(const optim::OptimizerState& state) override { optimizer_->load_state(state); }
  MemoryReport memory() const override {
    MemoryReport m;
    for (const auto& p : params_) m.parameters += bytes_of(p), m.gradients += bytes_of(p);
    m.optimizer_state = state_bytes(*optimizer_);
    m.buffers = reducer_ ? reducer_->buffer_bytes() : 0;
    return m;
  }

 private:
  std::vector<torch::Tensor> params_;
  std::unique_ptr<optim::Optimizer> optimizer_;
  std::unique_ptr<GradReducer> reducer_;
};

// zero1 / zero2: the optimizer sees only this rank's pieces of each bucket's chunk.
class ZeroStrategy final : public ShardingStrategy {
 public:
  ZeroStrategy(World& world, const config::Config& config, const optim::NamedParams& params, int stage)
      : comm_(world.comm()), stage_(stage), params_(tensors_of(params)) {
    for (const auto& [name, p] : params) names_.push_back(name);
    broadcast_parameters(comm_, params);
    std::vector<int64_t> numels;
    for (const auto& p : params_) numels.push_back(p.numel());
    const auto dtype = reduce_dtype(config);
    auto buckets = plan_buckets(numels, static_cast<int64_t>(c10::elementSize(dtype)), config.distributed.bucket_size,
                                comm_.size());
    reducer_ = std::make_unique<GradReducer>(
        comm_, params_, buckets, stage == 1 ? GradReducer::Mode::kAllReduce : GradReducer::Mode::kReduceScatter, dtype,
        /*write_back=*/false);
    pieces_ = shard_pieces(reducer_->buckets(), comm_.rank());
    // Every parameter gets a piece, empty where this rank owns none of it, so that the optimizer's
    // groups (matched by name) are the same on every rank.
    piece_of_.assign(params_.size(), -1);
    for (size_t i = 0; i < pieces_.size(); ++i) piece_of_[pieces_[i].param] = static_cast<int64_t>(i);
    optim::NamedParams shard;
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < params_.size(); ++i) {
      auto flat = params_[i].detach().view(-1);
      const int64_t k = piece_of_[i];
      views_.push_back(k < 0 ? flat.narrow(0, 0, 0) : flat.narrow(0, pieces_[static_cast<size_t>(k)].param_offset,
                                                                   pieces_[static_cast<size_t>(k)].numel));
      shard.emplace_back(params[i].first, views_.back());
    }
    optimizer_ = optim::make_optimizer(config.optimizer, shard);
    for (size_t b = 0; b < reducer_->buckets().size(); ++b) {
      const auto& bucket = reducer_->buckets()[b];
      const auto options = params_[bucket.entries.front().param].options();
      owns_.push_back(torch::zeros({bucket.chunk()}, options));
      if (dtype != params_.front().scalar_type()) fulls_.push_back(torch::empty({bucket.padded_numel}, options));
    }
  }

  std::string name() const override { return stage_ == 1 ? "zero1" : "zero2"; }
  void before_backward(bool last) override {
    if (last) reducer_->arm();
  }
  void after_backward() override {
    reducer_->finish();
    grad_chunks_.clear();
    const int rank = comm_.rank();
    for (size_t b = 0; b < reducer_->buckets().size(); ++b) {
      const int64_t chunk = reducer_->buckets()[b].chunk();
      torch::Tensor c = stage_ == 1 ? reducer_->flat(b).narrow(0, rank * chunk, chunk) : reducer_->chunk(b);
      grad_chunks_.push_back(c.scalar_type() == torch::kFloat32 ? c : c.to(torch::kFloat32));
    }
    for (size_t i = 0; i < params_.size(); ++i) {
      const int64_t k = piece_of_[i];
      if (k < 0) continue;
      const auto& piece = pieces_[static_cast<size_t>(k)];
      views_[i].mutable_grad() = grad_chunks_[piece.bucket].narrow(0, piece.chunk_offset, piece.numel);
    }
  }
  std::vector<torch::Tensor> grads() override { return grad_chunks_; }
  Communicator* shard_comm() override { return &comm_; }

  void step() override {
    optimizer_->step();
    // All-gather the updated chunks, every bucket in flight at once, into the buffers allocated
    // at start: this rank's chunk, and the bucket's flat buffer (free now that the gradients
    // are used) or, when that holds another dtype, a buffer of the parameters' own.
    torch::NoGradGuard no_grad;
    const auto& buckets = reducer_->buckets();
    std::vector<WorkPtr> works;
    for (size_t b = 0; b < buckets.size(); ++b) {
      for (const auto& piece : pieces_) {
        if (piece.bucket == b) owns_[b].narrow(0, piece.chunk_offset, piece.numel).copy_(views_[piece.param]);
      }
      works.push_back(comm_.all_gather(gathered(b), owns_[b]));
    }
    for (size_t b = 0; b < buckets.size(); ++b) {
      works[b]->wait();
      for (const auto& e : buckets[b].entries) params_[e.param].view(-1).copy_(gathered(b).narrow(0, e.offset, e.numel));
    }
  }
  void zero_grad() override {
    for (auto& p : params_) p.mutable_grad() = torch::Tensor();
    for (auto& v : views_) v.mutable_grad() = torch::Tensor();
    grad_chunks_.clear();
  }
  optim::Optimizer& optimizer() override { return *optimizer_; }

  optim::OptimizerState full_optimizer_state() override {
    torch::NoGradGuard no_grad;
    const optim::OptimizerState local = optimizer_->state();
    std::map<std::string, torch::Tensor> have(local.tensors.begin(), local.tensors.end());
    // Which (parameter, key) pairs have state on some rank.
    const auto device = params_.front().device();
    auto present = torch::zeros({static_cast<int64_t>(params_.size()), static_cast<int64_t>(kStateKeys.size())},
                                torch::TensorOptions().dtype(torch::kInt64));
    for (const auto& [name, t] : local.tensors) {
      const size_t slash = name.rfind('/');
      const auto key = std::find(kStateKeys.begin(), kStateKeys.end(), name.substr(slash + 1));
      if (key == kStateKeys.end()) {
        throw util::CheckpointError("cannot gather the optimizer state `" + name + "` from the shards",
                                    "report this as a bug");
      }
      present[index_of(name.substr(0, slash))][key - kStateKeys.begin()] = 1;
    }
    auto present_all = present.to(device);
    comm_.all_reduce(present_all, ReduceOp::kMax)->wait();
    present = present_all.cpu();
    // Every key bucket by bucket: each rank contributes its chunk, all-gathered into the whole.
    optim::OptimizerState out;
    std::vector<std::vector<torch::Tensor>> whole(params_.size(), std::vector<torch::Tensor>(kStateKeys.size()));
    const auto& buckets = reducer_->buckets();
    for (size_t k = 0; k < kStateKeys.size(); ++k) {
      if (present.select(1, static_cast<int64_t>(k)).sum().item<int64_t>() == 0) continue;
      for (size_t b = 0; b < buckets.size(); ++b) {
        auto own = torch::zeros({buckets[b].chunk()}, params_.front().options());
        for (const auto& piece : pieces_) {
          if (piece.bucket != b) continue;
          auto it = have.find(names_[piece.param] + "/" + kStateKeys[k]);
          if (it != have.end()) own.narrow(0, piece.chunk_offset, piece.numel).copy_(it->second.reshape(-1));
        }
        auto full = torch::empty({buckets[b].padded_numel}, own.options());
        comm_.all_gather(full, own)->wait();
        for (const auto& e : buckets[b].entries) {
          if (present[static_cast<int64_t>(e.param)][static_cast<int64_t>(k)].item<int64_t>() == 0) continue;
          whole[e.param][k] = full.narrow(0, e.offset, e.numel).view(params_[e.param].sizes()).clone();
        }
      }
    }
    for (size_t i = 0; i < params_.size(); ++i) {
      for (size_t k = 0; k < kStateKeys.size(); ++k) {
        if (whole[i][k].defined()) out.tensors.emplace_back(names_[i] + "/" + kStateKeys[k], whole[i][k]);
      }
    }
    // Step counts: a rank without a piece of a parameter has none for it; the others agree.
    out.meta = local.meta;
    if (local.meta.contains("steps")) {
      auto steps = torch::zeros({static_cast<int64_t>(params_.size())}, torch::TensorOptions().dtype(torch::kInt64));
      for (const auto& [name, n] : local.meta["steps"].items()) steps[index_of(name)] = n.get<int64_t>();
      auto steps_all = steps.to(device);
      comm_.all_reduce(steps_all, ReduceOp::kMax)->wait();
      steps = steps_all.cpu();
      nlohmann::json merged = nlohmann::json::object();
      for (size_t i = 0; i < params_.size(); ++i) {
        if (const int64_t n = steps[static_cast<int64_t>(i)].item<int64_t>(); n > 0) merged[names_[i]] = n;
      }
      out.meta["steps"] = merged;
    }
    return out;
  }

  void load_full_optimizer_state(const optim::OptimizerState& state) override {
    optim::OptimizerState shard;
    shard.meta = state.meta;
    for (const auto& [name, t] : state.tensors) {
      const size_t slash = name.rfind('/');
      const size_t i = index_of(name.substr(0, slash));
      if (t.numel() != params_[i].numel()) {
        throw util::CheckpointError("optimizer state `" + name + "` has " + std::to_string(t.numel()) +
                                        " elements, the parameter " + std::to_string(params_[i].numel()),
                                    "resume with the checkpoint's model shape");
      }
      const int64_t k = piece_of_[i];
      auto flat = t.reshape(-1);
      shard.tensors.emplace_back(name, k < 0 ? flat.narrow(0, 0, 0)
                                             : flat.narrow(0, pieces_[static_cast<size_t>(k)].param_offset,
                                                           pieces_[static_cast<size_t>(k)].numel));
    }
    optimizer_->load_state(shard);
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
    m.buffers = reducer_->buffer_bytes();
    for (const auto& t : owns_) m.buffers += bytes_of(t);
    for (const auto& t : fulls_) m.buffers += bytes_of(t);
    return m;
  }

 private:
  // Every state key the element-wise optimizers keep (adafactor is refused under zero).
  static inline const std::vector<std::string> kStateKeys = {"exp_avg", "exp_avg_sq", "max_exp_avg_sq",
                                                             "momentum_buffer"};
  size_t index_of(const std::string& name) const {
    const auto it = std::find(names_.begin(), names_.end(), name);
    if (it == names_.end()) {
      throw util::CheckpointError("the optimizer state names `" + name + "`, which this model does not have",
                                  "resume with the checkpoint's model");
    }
    return static_cast<size_t>(it - names_.begin());
  }

  Communicator& comm_;
  int stage_;
  std::vector<torch::Tensor> params_;
  std::vector<std::string> names_;
  std::unique_ptr<GradReducer> reducer_;
  std::vector<ShardPiece> pieces_;
  std::vector<int64_t> piece_of_;          // per parameter: index into pieces_, -1 for none
  std::vector<torch::Tensor> views_;       // per parameter: this rank's piece, a view of the parameter
  std::vector<torch::Tensor> grad_chunks_;  // per bucket: this rank's summed gradient chunk (fp32)
  std::unique_ptr<optim::Optimizer> optimizer_;
  std::vector<torch::Tensor> owns_;   // per bucket: this rank's updated chunk, sent by the all-gather
  std::vector<torch::Tensor> fulls_;  // per bucket: the gathered parameters, only when the reduce dtype differs

  torch::Tensor& gathered(size_t b) { return fulls_.empty() ? reducer_->scratch(b) : fulls_[b]; }
};

}  // namespace

std::unique_ptr<ShardingStrategy> ShardingStrategy::create(World& world, const config::Config& config,
                                                           const optim::NamedParams& params) {
  using config::Strategy;
  const Strategy s = config.distributed.strategy;
  if (world.size() == 1 || s == Strategy::kDdp) {
    if (config.distributed.cpu_offload && world.size() > 1) {
      throw util::ConfigError("distributed.cpu_offload needs a zero strategy: ddp keeps the optimizer state on every rank",
                              "use distributed.strategy=zero1, zero2 or zero3, or distributed.cpu_offload=false");
    }
    return std::make_unique<ReplicatedStrategy>(world, config, params);
  }
  if (config.optimizer.name == config::OptimizerName::kAdafactor) {
    throw util::ConfigError("optimizer.name=adafactor factors whole weight matrices, which distributed.strategy=" +
                                std::string(s == Strategy::kZero1 ? "zero1" : s == Strategy::kZero2 ? "zero2" : "zero3") +
                                " splits across ranks",
                            "use distributed.strategy=ddp with adafactor, or optimizer.name=adamw, sgd or lion");
  }
  switch (s) {
    case Strategy::kZero1: return std::make_unique<ZeroStrategy>(world, config, params, 1);
    case Strategy::kZero2: return std::make_unique<ZeroStrategy>(world, config, params, 2);
    default: break;
  }
  throw util::ConfigError("distributed.strategy=" + std::string(s == Strategy::kZero3 ? "zero3" : "hybrid") +
                              " is not available yet in this build",
                          "use ddp, zero1 or zero2");
}

}  // namespace hftrain::dist
