#include "train/state/checkpoint_snapshot.h"

#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/torch.h>

#include "ckpt/rotation.h"
#include "peft/peft_files.h"
#include "train/state/checkpoint_state.h"

namespace hftrain::train {

void write_model_files(ckpt::CheckpointWriter& writer, const CheckpointSnapshot& s) {
  writer.add_sharded_safetensors("model", s.weights, s.shard_size, {{"format", "pt"}});
  for (const auto& [name, text] : s.text_files) writer.add_bytes(name, text);
  if (s.peft_record) {
    writer.add_json(kPeftFile, *s.peft_record);
    writer.add_bytes(peft::kAdapterConfigFile, s.adapter_config);
    writer.add_safetensors(peft::kAdapterWeightsFile, s.adapter_tensors);
  }
}

void write_state_files(ckpt::CheckpointWriter& writer, const CheckpointSnapshot& s) {
  for (const auto& [name, json] : s.state_json_before_rng) writer.add_json(name, json);
  writer.add_safetensors(kRngFile, s.rng);
  for (const auto& [name, json] : s.state_json_after_rng) writer.add_json(name, json);
  writer.add_bytes(kConfigFile, s.config_yaml);
  writer.add_json(kEnvironmentFile, s.environment);
  if (s.tensor_parallel) writer.add_json(kTensorParallelFile, *s.tensor_parallel);
}

Committed commit_snapshot(ckpt::CheckpointWriter& writer, const CheckpointSnapshot& s,
                          const std::filesystem::path& run_dir) {
  Committed out;
  out.dir = writer.commit(s.config_hash, {{"step", s.step}});
  out.removed = ckpt::rotate_checkpoints(run_dir, s.keep_last, s.keep_step);
  return out;
}

torch::Tensor HostCopies::copy(const torch::Tensor& t) {
  const torch::Tensor src = t.detach();
  torch::Tensor* buffer = nullptr;
  if (next_ < pool_.size() && pool_[next_].scalar_type() == src.scalar_type() &&
      pool_[next_].numel() == src.numel()) {
    buffer = &pool_[next_];
  } else {
    auto options = torch::TensorOptions().dtype(src.scalar_type()).device(torch::kCPU);
    if (src.is_cuda()) options = options.pinned_memory(true);
    torch::Tensor fresh = torch::empty({src.numel()}, options);
    if (next_ < pool_.size()) {
      pool_[next_] = std::move(fresh);
    } else {
      pool_.push_back(std::move(fresh));
    }
    buffer = &pool_[next_];
  }
  ++next_;
  torch::Tensor out = buffer->view(src.sizes());
  out.copy_(src, /*non_blocking=*/src.is_cuda());
  if (src.is_cuda() && !ready_) ready_.emplace(src.device().type());
  return out;
}

model::TensorList HostCopies::copy(const model::TensorList& tensors) {
  model::TensorList out;
  out.reserve(tensors.size());
  for (const auto& [name, t] : tensors) out.emplace_back(name, copy(t));
  return out;
}

std::vector<parallel::StatePiece> HostCopies::copy(const std::vector<parallel::StatePiece>& pieces) {
  std::vector<parallel::StatePiece> out;
  out.reserve(pieces.size());
  for (const auto& p : pieces) out.push_back({p.name, p.shape, p.offset, copy(p.data)});
  return out;
}

void HostCopies::end() {
  if (!ready_) return;
  // The copies were queued on the current stream of the device: the event passes when they are done.
  const c10::impl::DeviceGuardImplInterface* impl = c10::impl::getDeviceGuardImpl(ready_->device_type());
  ready_->record(impl->getStream(impl->getDevice()));
}

void HostCopies::wait() const {
  if (!ready_) return;
  // On the event's device: a thread's current device is 0 otherwise, whose context a rank on another
  // GPU must not create.
  const c10::DeviceGuard guard(ready_->device());
  ready_->synchronize();
}

int64_t HostCopies::bytes() const {
  int64_t n = 0;
  for (const auto& t : pool_) n += t.numel() * static_cast<int64_t>(t.element_size());
  return n;
}

}  // namespace hftrain::train
