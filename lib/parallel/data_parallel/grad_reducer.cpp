#include "parallel/data_parallel/grad_reducer.h"

#include <torch/torch.h>

#include "parallel/data_parallel/grad_hook.h"

namespace hftrain::parallel {

GradReducer::GradReducer(Communicator& comm, std::vector<torch::Tensor> params, std::vector<Bucket> buckets, Mode mode,
                         torch::ScalarType reduce_dtype, bool release_grads)
    : comm_(comm),
      params_(std::move(params)),
      buckets_(std::move(buckets)),
      mode_(mode),
      release_grads_(release_grads) {
  bucket_of_.assign(params_.size(), 0);
  for (size_t b = 0; b < buckets_.size(); ++b) {
    for (const auto& e : buckets_[b].entries) bucket_of_[e.param] = b;
    const auto options = params_[buckets_[b].entries.front().param].options().dtype(reduce_dtype);
    flats_.push_back(torch::zeros({buckets_[b].padded_numel}, options));
    if (mode_ == Mode::kReduceScatter) chunks_.push_back(torch::zeros({buckets_[b].chunk()}, options));
  }
  pending_.assign(buckets_.size(), 0);
  works_.resize(buckets_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    accumulators_.push_back(after_grad_accumulated(params_[i], [this, i] { on_grad_ready(i); }));
  }
}

GradReducer::~GradReducer() = default;

int64_t GradReducer::buffer_bytes() const {
  int64_t bytes = 0;
  for (const auto& f : flats_) bytes += f.numel() * static_cast<int64_t>(f.element_size());
  for (const auto& c : chunks_) bytes += c.numel() * static_cast<int64_t>(c.element_size());
  return bytes;
}

void GradReducer::arm() {
  armed_ = true;
  // set_data to another dtype drops a parameter's hooked AccumulateGrad node (trainer.param_dtype=
  // bf16 swaps its parameters between bf16 copies and fp32 masters): hook the node the last
  // forward made, or the reduction would wait for finish() instead of overlapping the backward.
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!is_grad_accumulator(params_[i], accumulators_[i])) {
      accumulators_[i] = after_grad_accumulated(params_[i], [this, i] { on_grad_ready(i); });
    }
  }
  next_launch_ = 0;
  for (size_t b = 0; b < buckets_.size(); ++b) pending_[b] = static_cast<int64_t>(buckets_[b].entries.size());
  std::fill(works_.begin(), works_.end(), nullptr);
}

void GradReducer::on_grad_ready(size_t param) {
  if (!armed_) return;
  const size_t b = bucket_of_[param];
  if (--pending_[b] > 0) return;
  while (next_launch_ < buckets_.size() && pending_[next_launch_] == 0) launch(next_launch_++);
}

void pack_gradients(const Bucket& bucket, std::vector<torch::Tensor>& params, torch::Tensor& flat, bool release) {
  torch::NoGradGuard no_grad;
  int64_t end = 0;  // of the previous entry: the gap up to this one (alignment) stays zero
  for (const auto& e : bucket.entries) {
    if (e.offset > end) flat.narrow(0, end, e.offset - end).zero_();
    end = e.offset + e.numel;
    auto& p = params[e.param];
    auto slot = flat.narrow(0, e.offset, e.numel);
    if (p.grad().defined()) {
      slot.copy_(p.grad().reshape(-1));
    } else {
      slot.zero_();  // a parameter this step did not use
    }
    if (release) p.mutable_grad() = torch::Tensor();
  }
  if (bucket.padded_numel > bucket.numel) flat.narrow(0, bucket.numel, bucket.padded_numel - bucket.numel).zero_();
}

void GradReducer::launch(size_t b) {
  torch::NoGradGuard no_grad;
  auto& flat = flats_[b];
  // zero2's sharded gradients: the full gradient is not kept once it is in the bucket.
  pack_gradients(buckets_[b], params_, flat, /*release=*/mode_ == Mode::kReduceScatter && release_grads_);
  works_[b] = mode_ == Mode::kAllReduce ? comm_.all_reduce(flat, ReduceOp::kSum)
                                        : comm_.reduce_scatter(chunks_[b], flat, ReduceOp::kSum);
}

void GradReducer::finish() {
  if (!armed_) return;
  armed_ = false;
  while (next_launch_ < buckets_.size()) launch(next_launch_++);
  wait_all(works_);
  if (mode_ != Mode::kAllReduce) return;
  torch::NoGradGuard no_grad;
  for (size_t b = 0; b < buckets_.size(); ++b) {
    for (const auto& e : buckets_[b].entries) {
      auto& p = params_[e.param];
      auto summed = flats_[b].narrow(0, e.offset, e.numel).view(p.sizes());
      if (!p.grad().defined()) {
        p.mutable_grad() = summed.to(p.scalar_type()).clone();
      } else {
        p.mutable_grad().copy_(summed);
      }
    }
  }
}

}  // namespace hftrain::parallel
