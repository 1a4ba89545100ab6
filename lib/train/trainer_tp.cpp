// The Trainer's tensor-parallel pieces (model/tensor_parallel.h, parallel/tensor/tp_group.h): the
// gradient norm's weights, the memory report's share, the split parameters whole for a save or a
// load, and the group's generators and replicated copies kept in step.
#include <torch/torch.h>
#ifdef HFTRAIN_HAVE_CUDA
#include <ATen/cuda/CUDAGeneratorImpl.h>
#endif

#include "train/trainer.h"
#include "util/log.h"

namespace hftrain::train {
namespace {

// Sets `gen` from the tensor-parallel group's rank 0 (collective over the group).
void broadcast_generator(at::Generator gen, parallel::Communicator& group, const torch::Device& device) {
  std::lock_guard<std::mutex> lock(gen.mutex());
  torch::Tensor state = gen.get_state().to(device);
  group.broadcast(state, 0)->wait();
  gen.set_state(state.cpu());
}

}  // namespace

std::vector<double> Trainer::tp_norm_weights() const {
  std::vector<double> weights;
  const int tp = world_->tp_size();
  for (const auto& [name, p] : model_->parameters_by_name()) {
    weights.push_back(model_->tp_split(name, world_->tp_rank()).split() ? 1.0 : 1.0 / tp);
  }
  return weights;
}

std::unique_ptr<parallel::TpWholeParameters> Trainer::tp_whole(parallel::TpWholeParameters::Access access) {
  // A save: the group of data-parallel rank 0, where rank 0 writes (zero3 gathered its units there).
  if (!tp_group_ || (access == parallel::TpWholeParameters::Access::kSave && world_->dp_rank() != 0)) return nullptr;
  return std::make_unique<parallel::TpWholeParameters>(model_->parameters_by_name(), tp_split_of(), *tp_group_,
                                                       access, device_);
}

std::string Trainer::tp_memory_share() const {
  if (!tp_group_) return "";
  // Ψ of this rank: its pieces of the split parameters plus the parameters every rank holds whole.
  int64_t split_whole = 0, pieces = 0, whole = 0;
  for (const auto& [name, p] : model_->parameters_by_name()) {
    const model::TpSplit split = model_->tp_split(name, world_->tp_rank());
    if (!split.split()) {
      whole += p.numel();
      continue;
    }
    pieces += p.numel();
    split_whole += p.numel() / split.length() * split.whole;
  }
  const int tp = world_->tp_size();
  return "; tensor parallel " + std::to_string(tp) + ": Ψ = this rank's pieces of the split parameters (" +
         std::to_string(pieces) + " of " + std::to_string(split_whole) + ", 1/" + std::to_string(tp) + " = " +
         std::to_string(split_whole / tp) + ") + the parameters every rank holds whole (" + std::to_string(whole) +
         ": norms, row-split biases, positions)";
}

parallel::SplitOf Trainer::tp_split_of() const {
  const TaskModel* model = model_.get();
  return [model](const std::string& name, int rank) { return model->tp_split(name, rank); };
}

void Trainer::check_replicas_agree() {
  // The sum and the sum of squares of every parameter the group's ranks hold whole, in fp64: their
  // max and min over the group differ when the copies drifted apart (different dropout numbers in
  // a region they compute alike, say).
  torch::NoGradGuard no_grad;
  auto sums = torch::zeros({2}, torch::TensorOptions().dtype(torch::kFloat64).device(device_));
  for (const auto& [name, p] : model_->parameters_by_name()) {
    if (model_->tp_split(name, world_->tp_rank()).split() || p.numel() == 0) continue;
    const auto x = p.detach().to(device_, torch::kFloat64);
    sums[0] += x.sum();
    sums[1] += x.square().sum();
  }
  auto high = sums.clone(), low = sums.clone();
  world_->tensor_parallel_group().all_reduce(high, parallel::ReduceOp::kMax)->wait();
  world_->tensor_parallel_group().all_reduce(low, parallel::ReduceOp::kMin)->wait();
  const double apart = ((high - low).abs() / high.abs().clamp_min(1e-30)).max().item<double>();
  if (apart > 1e-6) {
    util::log::warn("tensor parallelism: the ranks of group " + std::to_string(world_->dp_rank()) +
                    " hold copies of the parameters they share that differ by " + std::to_string(apart) +
                    " (relative) at step " + std::to_string(state_.step) +
                    "; the checkpoint keeps tensor-parallel rank 0's");
  }
}

void Trainer::share_default_generators() {
  parallel::Communicator& group = world_->tensor_parallel_group();
  broadcast_generator(at::detail::getDefaultCPUGenerator(), group, device_);
#ifdef HFTRAIN_HAVE_CUDA
  if (device_.is_cuda()) broadcast_generator(at::cuda::detail::getDefaultCUDAGenerator(device_.index()), group, device_);
#endif
}

}  // namespace hftrain::train
