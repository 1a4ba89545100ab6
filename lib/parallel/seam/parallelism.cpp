#include "parallel/seam/parallelism.h"

#include <mutex>

#include <torch/torch.h>
#ifdef HFTRAIN_HAVE_CUDA
#include <ATen/cuda/CUDAGeneratorImpl.h>
#endif

#include "parallel/data_parallel/memory_report.h"
#include "parallel/seam/stage_optimizer.h"
#include "util/log.h"

namespace hftrain::parallel {
namespace {

// A reduction over the groups in `groups` (in order), or empty when there are none.
std::function<void(torch::Tensor&)> over(std::vector<Communicator*> groups, ReduceOp op) {
  if (groups.empty()) return {};
  return [groups = std::move(groups), op](torch::Tensor& x) {
    for (Communicator* group : groups) group->all_reduce(x, op)->wait();
  };
}

template <typename Scope>
class Held final : public ScopeGuard {
 public:
  template <typename... Args>
  explicit Held(Args&&... args) : scope_(std::forward<Args>(args)...) {}

 private:
  Scope scope_;
};

// Several scopes, ended in the reverse order of their making.
class Stack final : public ScopeGuard {
 public:
  void push(std::unique_ptr<ScopeGuard> scope) {
    if (scope) scopes_.push_back(std::move(scope));
  }
  ~Stack() override {
    while (!scopes_.empty()) scopes_.pop_back();
  }

 private:
  std::vector<std::unique_ptr<ScopeGuard>> scopes_;
};

// Sets `gen` from the tensor-parallel group's rank 0 (collective over the group).
void broadcast_generator(at::Generator gen, Communicator& group, const torch::Device& device) {
  std::lock_guard<std::mutex> lock(gen.mutex());
  torch::Tensor state = gen.get_state().to(device);
  group.broadcast(state, 0)->wait();
  gen.set_state(state.cpu());
}

}  // namespace

Parallelism::Parallelism(World& world, ShardingStrategy& strategy, const torch::Device& device,
                         std::function<NamedTensors()> parameters, SplitOf split, std::optional<Stages> stages,
                         bool sequence_parallel)
    : world_(world),
      strategy_(strategy),
      device_(device),
      parameters_(std::move(parameters)),
      split_(std::move(split)),
      stages_(std::move(stages)) {
  if (world_.tp_size() > 1) tp_group_ = make_tp_group(world_.tensor_parallel_group(), sequence_parallel);
  // A gradient's pieces: the strategy's shards, then each stage's own parameters, then the
  // tensor-parallel group's pieces (after the sum over the shards, the sum over the group).
  std::vector<Communicator*> pieces;
  if (Communicator* shards = strategy_.shard_comm()) pieces.push_back(shards);
  if (world_.pp_size() > 1) pieces.push_back(&world_.pipeline_group());
  if (world_.tp_size() > 1) pieces.push_back(&world_.tensor_parallel_group());
  sum_pieces_ = over(pieces, ReduceOp::kSum);
  max_pieces_ = over(pieces, ReduceOp::kMax);
}

torch::Tensor Parallelism::global_targets(int64_t local) const {
  if (world_.dp_size() == 1) return torch::Tensor();
  auto count = torch::full({1}, local, torch::TensorOptions().dtype(torch::kInt64).device(device_));
  world_.data_parallel().all_reduce(count)->wait();
  return count.clamp_min(1).to(torch::kFloat32).reshape({});
}

void Parallelism::sum_loss(torch::Tensor& loss_sum) const {
  if (world_.dp_size() > 1) world_.data_parallel().all_reduce(loss_sum)->wait();
  if (world_.pp_size() > 1) world_.pipeline_group().all_reduce(loss_sum)->wait();
}

int64_t Parallelism::sum_targets(int64_t local) const {
  return all_reduce_value(world_.data_parallel(), local, ReduceOp::kSum, device_);
}

int64_t Parallelism::agree(int64_t value, ReduceOp op) const {
  return all_reduce_value(world_.comm(), value, op, device_);
}

const std::vector<torch::Tensor>& Parallelism::norm_weights() {
  if (!norm_weights_made_ && tp_group_) {
    std::vector<double> per_parameter;
    const int tp = world_.tp_size();
    for (const auto& [name, p] : parameters_()) {
      per_parameter.push_back(split_(name, world_.tp_rank()).split() ? 1.0 : 1.0 / tp);
    }
    norm_weights_ = strategy_.norm_weights(per_parameter);
  }
  norm_weights_made_ = true;
  return norm_weights_;
}

std::unique_ptr<ScopeGuard> Parallelism::whole_model(Access access, int64_t step) {
  const bool save = access == Access::kSave;
  auto stack = std::make_unique<Stack>();
  // A save gathers on the data-parallel rank 0 of each group (where the main rank writes); a load
  // fills every rank.
  stack->push(
      std::make_unique<Held<WholeParameters>>(strategy_, access, save ? world_.dp_rank() == 0 : world_.is_main()));
  if (tp_group_ && !(save && world_.dp_rank() != 0)) {
    if (save) check_replicas_agree(step);  // the parameters are whole here
    const auto tp_access = save ? TpWholeParameters::Access::kSave : TpWholeParameters::Access::kLoad;
    stack->push(std::make_unique<Held<TpWholeParameters>>(parameters_(), split_, *tp_group_, tp_access, device_));
  }
  if (stages_) stack->push(stages_->whole(access));
  return stack;
}

LocalOptimizerState Parallelism::optimizer_pieces_to_save() {
  LocalOptimizerState local = strategy_.local_optimizer_state();
  if (tp_group_) {  // each tensor-parallel rank its own pieces (tensor_parallel.json places them)
    local = tp_optimizer_pieces(std::move(local), split_, world_.tp_rank(), world_.tp_size());
  }
  if (world_.pp_size() > 1) {  // each stage's files of its own; the groups name every stage's parameters
    if (local.file >= 0) local.file += world_.pp_rank() * local.num_files;
    local.meta = pipeline_optimizer_meta(local.meta, world_.pipeline_group(), device_);
  }
  local.num_files *= world_.pp_size();
  return local;
}

void Parallelism::load_optimizer_state(const SavedOptimizerState& saved, const std::optional<nlohmann::json>& tp_record,
                                       const std::string& tp_record_file) {
  // A tensor-parallel checkpoint's pieces put together whole, then (tensor parallel now) read as
  // this rank's pieces.
  std::unique_ptr<SavedOptimizerState> assembled, staged, sliced;
  const SavedOptimizerState* state = &saved;
  if (tp_record) {
    assembled = assembled_optimizer_state(*state, *tp_record, tp_record_file);
    state = assembled.get();
  }
  if (world_.pp_size() > 1) {  // this stage's parameters' state
    std::vector<std::string> mine;
    for (const auto& [name, p] : parameters_()) mine.push_back(name);
    staged = stage_optimizer_state(*state, mine);
    state = staged.get();
  }
  if (tp_group_) {
    sliced = sliced_optimizer_state(*state, split_, world_.tp_rank());
    state = sliced.get();
  }
  strategy_.load_optimizer_state(*state);  // each rank reads its pieces
}

std::optional<nlohmann::json> Parallelism::tp_layout_record() {
  if (!tp_group_) return std::nullopt;
  return parallel::tp_layout_record(parameters_(), split_, world_.tp_size());
}

void Parallelism::check_replicas_agree(int64_t step) {
  // The sum and the sum of squares of every parameter the group's ranks hold whole, in fp64: their
  // max and min over the group differ when the copies drifted apart (different dropout numbers in
  // a region they compute alike, say).
  torch::NoGradGuard no_grad;
  auto sums = torch::zeros({2}, torch::TensorOptions().dtype(torch::kFloat64).device(device_));
  for (const auto& [name, p] : parameters_()) {
    if (split_(name, world_.tp_rank()).split() || p.numel() == 0) continue;
    const auto x = p.detach().to(device_, torch::kFloat64);
    sums[0] += x.sum();
    sums[1] += x.square().sum();
  }
  auto high = sums.clone(), low = sums.clone();
  world_.tensor_parallel_group().all_reduce(high, ReduceOp::kMax)->wait();
  world_.tensor_parallel_group().all_reduce(low, ReduceOp::kMin)->wait();
  const double apart = ((high - low).abs() / high.abs().clamp_min(1e-30)).max().item<double>();
  if (apart > 1e-6) {
    util::log::warn("tensor parallelism: the ranks of group " + std::to_string(world_.dp_rank()) +
                    " hold copies of the parameters they share that differ by " + std::to_string(apart) +
                    " (relative) at step " + std::to_string(step) + "; the checkpoint keeps tensor-parallel rank 0's");
  }
}

void Parallelism::share_default_generators() {
  if (!tp_group_) return;
  Communicator& group = world_.tensor_parallel_group();
  broadcast_generator(at::detail::getDefaultCPUGenerator(), group, device_);
#ifdef HFTRAIN_HAVE_CUDA
  if (device_.is_cuda())
    broadcast_generator(at::cuda::detail::getDefaultCUDAGenerator(device_.index()), group, device_);
#endif
}

std::string Parallelism::tp_memory_share() const {
  if (!tp_group_) return "";
  // Ψ of this rank: its pieces of the split parameters plus the parameters every rank holds whole.
  int64_t split_whole = 0, pieces = 0, whole = 0;
  for (const auto& [name, p] : parameters_()) {
    const model::TpSplit split = split_(name, world_.tp_rank());
    if (!split.split()) {
      whole += p.numel();
      continue;
    }
    pieces += p.numel();
    split_whole += p.numel() / split.length() * split.whole;
  }
  const int tp = world_.tp_size();
  return "; tensor parallel " + std::to_string(tp) + ": Ψ = this rank's pieces of the split parameters (" +
         std::to_string(pieces) + " of " + std::to_string(split_whole) + ", 1/" + std::to_string(tp) + " = " +
         std::to_string(split_whole / tp) + ") + the parameters every rank holds whole (" + std::to_string(whole) +
         ": norms, row-split biases, positions)";
}

std::string Parallelism::memory_report(const NamedTensors& parameters, UnitSizes units) const {
  return parallel::memory_report(strategy_, world_, parameters, units) + tp_memory_share() +
         (stages_ ? stages_->memory_clause : std::string());
}

}  // namespace hftrain::parallel
