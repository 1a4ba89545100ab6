#include "train/state/checkpoint_rng.h"

#include <mutex>

#include <torch/torch.h>

#include "model/decoder/tensor_parallel.h"
#include "util/error.h"
#ifdef HFTRAIN_HAVE_CUDA
#include <ATen/cuda/CUDAGeneratorImpl.h>
#endif

namespace hftrain::train {

namespace fs = std::filesystem;

// This rank's generator states out of a checkpoint's: its own where the saving job had this
// rank, else none (the caller then seeds afresh).
model::TensorList rank_rng_states(const model::TensorList& saved, int rank) {
  if (rank == 0) return saved;
  model::TensorList out;
  const std::string suffix = ".rank" + std::to_string(rank);
  for (const auto& [name, state] : saved) {
    if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      out.emplace_back(name.substr(0, name.size() - suffix.size()), state);
    }
  }
  return out;
}

model::TensorList rng_states(const torch::Device& device) {
  model::TensorList out;
  {
    auto gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    out.emplace_back("cpu", gen.get_state());
  }
#ifdef HFTRAIN_HAVE_CUDA
  if (device.is_cuda()) {
    auto gen = at::cuda::detail::getDefaultCUDAGenerator(device.index());
    std::lock_guard<std::mutex> lock(gen.mutex());
    out.emplace_back("cuda", gen.get_state());
  }
#endif
  // Tensor parallelism: this rank's own stream too, once drawn from (model/decoder/tensor_parallel.h).
  if (model::tp_rng::active()) {
    const torch::Tensor own = model::tp_rng::state(device);
    if (own.defined()) out.emplace_back(device.is_cuda() ? "tp_cuda" : "tp_cpu", own);
  }
  static_cast<void>(device);
  return out;
}

// Sets `gen`'s state from a saved one, checked first against the state it has now (uint8, the
// same size): LibTorch's own checks would abort the resume with its internals in the message.
namespace {

void set_generator_state(at::Generator& gen, const torch::Tensor& state, const std::string& name,
                         const fs::path& file) {
  std::lock_guard<std::mutex> lock(gen.mutex());
  const torch::Tensor now = gen.get_state();
  if (state.scalar_type() != torch::kUInt8 || state.numel() != now.numel()) {
    throw util::CheckpointError(file.string() + ": the `" + name + "` generator state is " +
                                    std::string(c10::toString(state.scalar_type())) + " of " +
                                    std::to_string(state.numel()) + " elements; this build's is uint8 of " +
                                    std::to_string(now.numel()),
                                "the checkpoint is damaged or from another LibTorch; resume from another one");
  }
  try {
    gen.set_state(state);
  } catch (const c10::Error&) {
    gen.set_state(now);
    throw util::CheckpointError(file.string() + ": the `" + name + "` generator state is not a valid one",
                                "the checkpoint is damaged; resume from another one");
  }
}

}  // namespace

void restore_rng(const model::TensorList& states, const torch::Device& device, const fs::path& file) {
  bool cpu = false;
  for (const auto& [name, state] : states) {
    if (name == "cpu") {
      auto gen = at::detail::getDefaultCPUGenerator();
      set_generator_state(gen, state, name, file);
      cpu = true;
    }
#ifdef HFTRAIN_HAVE_CUDA
    if (name == "cuda" && device.is_cuda()) {
      auto gen = at::cuda::detail::getDefaultCUDAGenerator(device.index());
      set_generator_state(gen, state, name, file);
    }
#endif
    if ((name == "tp_cpu" && !device.is_cuda()) || (name == "tp_cuda" && device.is_cuda())) {
      model::tp_rng::set_state(device, state);
    }
  }
  static_cast<void>(device);
  if (!cpu) throw util::CheckpointError(file.string() + " has no `cpu` generator state", "the checkpoint is damaged");
}

// Every rank's generator states, as rank 0 writes them: rank 0's under their own names ("cpu",
// "cuda"), rank r's as "cpu.rank<r>" (collective).
model::TensorList gather_rng_states(parallel::World& world, const torch::Device& device) {
  model::TensorList mine = rng_states(device);
  if (world.size() == 1) return mine;
  model::TensorList out;
  for (const auto& [name, state] : mine) {
    auto local = state.to(device).contiguous();
    auto all = torch::empty({world.size() * local.numel()}, local.options());
    world.comm().all_gather(all, local)->wait();
    all = all.cpu();
    out.emplace_back(name, state);
    for (int r = 1; r < world.size(); ++r) {
      out.emplace_back(name + ".rank" + std::to_string(r), all.narrow(0, r * local.numel(), local.numel()).clone());
    }
  }
  return out;
}

}  // namespace hftrain::train
