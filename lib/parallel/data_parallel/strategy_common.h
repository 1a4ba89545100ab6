// Small pieces every sharding strategy uses (strategy.cpp, zero12.cpp, zero3.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include <torch/types.h>

#include "config/config.h"
#include "parallel/comm/communicator.h"
#include "parallel/data_parallel/shard_layout.h"
#include "optim/optimizer.h"

namespace hftrain::parallel {

inline int64_t bytes_of(const torch::Tensor& t) {
  return t.defined() ? t.numel() * static_cast<int64_t>(t.element_size()) : 0;
}

inline int64_t state_bytes(const optim::Optimizer& optimizer) {
  int64_t bytes = 0;
  for (const auto& [name, t] : optimizer.state().tensors) bytes += bytes_of(t);
  return bytes;
}

std::vector<torch::Tensor> tensors_of(const optim::NamedParams& params);
std::vector<std::string> names_of(const optim::NamedParams& params);
std::vector<std::vector<int64_t>> shapes_of(const optim::NamedParams& params);

// Every rank starts from rank 0's weights (they agree already when seeded alike; this makes sure).
void broadcast_parameters(Communicator& comm, const optim::NamedParams& params);
// Each of `tensors` from its rank in `roots` (parallel to it), all in flight at once.
void broadcast_from(Communicator& comm, const std::vector<torch::Tensor>& tensors, const std::vector<int>& roots);

// Where distributed.cpu_offload keeps optimizer state and master shards: CPU memory, pinned when
// the device is a GPU (so that the copies are asynchronous DMA).
torch::Tensor offload_copy(const torch::Tensor& t);

// Per element of each gradient chunk (`chunks`, one per bucket or unit, in their sizes and on their
// device): the weight of the parameter its piece of `layout` belongs to, 0 on padding
// (ShardingStrategy::norm_weights for the strategies whose gradients are flat chunks). Under
// tensor parallelism only: 4 bytes per element of this rank's chunks.
std::vector<torch::Tensor> chunk_norm_weights(const ShardLayout& layout, const std::vector<torch::Tensor>& chunks,
                                              const std::vector<double>& per_parameter);

// The gradient chunks the offloaded update reads, in CPU memory: a chunk on a GPU is copied into
// its pinned host twin in `host` (made at the first call, then reused), every copy queued before
// one wait for the device, where one blocking copy per parameter would wait each time. A chunk
// already in CPU memory is used as it is.

void copy_to_host(const std::vector<torch::Tensor>& chunks, std::vector<torch::Tensor>& host);

}  // namespace hftrain::parallel
