// Gradient reduction overlapped with backward. A post-accumulate hook on every parameter counts
// the gradients of its bucket (grad_buckets.h); when a bucket is complete its flat buffer is
// filled and its collective launched at once, while backward goes on with earlier layers.
// Buckets are launched strictly in order on every rank (a bucket that completes early waits
// for the ones before it), so the ranks' collectives always match. Only an armed backward
// reduces: the other micro-batches of an accumulation cycle accumulate locally.
//
// Gradients are SUMMED over ranks: the training loop already divides the loss by the target
// tokens of the whole step across all ranks.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <torch/types.h>

#include "parallel/comm/communicator.h"
#include "parallel/data_parallel/grad_buckets.h"

namespace hftrain::parallel {

// Copies the gradients of `bucket`'s parameters into the flat buffer `flat` at their offsets
// (zeros for a parameter without a gradient, and for the padding). With `release`, each
// parameter's own gradient is dropped once copied (sharded gradients keep only the reduction).
void pack_gradients(const Bucket& bucket, std::vector<torch::Tensor>& params, torch::Tensor& flat, bool release);

class GradReducer {
 public:
  enum class Mode {
    kAllReduce,      // every rank gets every summed gradient back in param.grad() (ddp)
    kReduceScatter,  // rank r gets chunk r of each bucket (zero1, zero2)
  };

  // `release_grads` (kReduceScatter): param.grad() is freed as soon as it is in its bucket
  // (zero2); zero1 keeps the full gradients until zero_grad, as its memory formula says, and
  // only its communication is that of a reduce-scatter.
  GradReducer(Communicator& comm, std::vector<torch::Tensor> params, std::vector<Bucket> buckets, Mode mode,
              torch::ScalarType reduce_dtype, bool release_grads = true);
  ~GradReducer();
  GradReducer(const GradReducer&) = delete;
  GradReducer& operator=(const GradReducer&) = delete;

  // The next backward pass reduces (call before the last micro-batch's backward).
  void arm();
  // After that backward: launches what is left (buckets with unused parameters), waits for
  // every bucket, and writes the results (param.grad(), or chunk()).
  void finish();

  const std::vector<Bucket>& buckets() const { return buckets_; }
  // This rank's summed chunk of bucket b, in the reduce dtype (kReduceScatter; after finish()).
  const torch::Tensor& chunk(size_t b) const { return chunks_[b]; }
  // Bucket b's flat buffer to write: it is free between finish() and the next arm(), where the zero
  // strategies all-gather the updated parameters into it instead of allocating a second copy.
  torch::Tensor& scratch(size_t b) { return flats_[b]; }
  // Bytes of the communication buffers (flat buckets and chunks), for the memory report.
  int64_t buffer_bytes() const;

 private:
  void on_grad_ready(size_t param);
  void launch(size_t bucket);

  Communicator& comm_;
  std::vector<torch::Tensor> params_;
  std::vector<Bucket> buckets_;
  Mode mode_;
  bool release_grads_;
  std::vector<size_t> bucket_of_;         // per parameter
  std::vector<int64_t> pending_;          // per bucket: gradients still to come
  std::vector<torch::Tensor> flats_;      // per bucket: (padded_numel,) in the reduce dtype
  std::vector<torch::Tensor> chunks_;     // per bucket: (chunk,) (kReduceScatter)
  std::vector<WorkPtr> works_;
  std::vector<std::shared_ptr<void>> accumulators_;  // keeps the hooked grad accumulators alive
  size_t next_launch_ = 0;
  bool armed_ = false;
};

}  // namespace hftrain::parallel
