// The one communication interface the sharding strategies use: collectives on flat, contiguous
// tensors with asynchronous handles. Backends are real engines: Open MPI for CPU tensors
// (mpi_communicator.h) and NCCL through LibTorch's c10d ProcessGroupNCCL for CUDA tensors
// (nccl_communicator.h); a world of one rank needs neither (LocalCommunicator).
//
// Every collective runs under the current phase's time budget (monitor.h's Phase). A collective
// that does not complete in time throws util::DistributedError naming the phase, the collective
// and the ranks that did not arrive; the caller must then end the process (a hung collective
// cannot be cancelled).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

namespace hftrain::parallel {

enum class ReduceOp { kSum, kMax, kMin };

// One side of a point-to-point transfer (pipeline parallelism): `tensor` (contiguous, on the
// backend's device kind) goes to rank `peer`, or is filled from it.
struct PeerTransfer {
  torch::Tensor tensor;
  int peer = 0;
  bool send = true;
};

// A collective in flight.
class Work {
 public:
  virtual ~Work() = default;
  // Blocks until the collective is done (on CUDA: until it is ordered before later work on the
  // current stream). Throws util::DistributedError on a timeout or a failed peer.
  virtual void wait() = 0;
};
using WorkPtr = std::shared_ptr<Work>;

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "mpi", "nccl", "local"
  virtual std::string backend() const = 0;

  // All tensors contiguous, on the backend's device kind, and (where a shape is named) of
  // exactly that many elements. In place:
  virtual WorkPtr all_reduce(torch::Tensor& tensor, ReduceOp op = ReduceOp::kSum) = 0;
  // `input` holds size() chunks of output.numel() elements; rank r receives the reduction of
  // every rank's chunk r in `output`.
  virtual WorkPtr reduce_scatter(torch::Tensor& output, const torch::Tensor& input, ReduceOp op = ReduceOp::kSum) = 0;
  // `output` holds size() chunks of input.numel() elements; chunk r is rank r's `input`.
  virtual WorkPtr all_gather(torch::Tensor& output, const torch::Tensor& input) = 0;
  virtual WorkPtr broadcast(torch::Tensor& tensor, int root) = 0;
  virtual void barrier() = 0;
  // Point to point: the transfers start together and the work completes when all of them have
  // (Megatron's batched send/recv: a stage that sends forward and receives backward in one
  // exchange cannot block its neighbour doing the reverse). Between two ranks, transfers in the
  // same direction match in the order they were started.
  virtual WorkPtr exchange(const std::vector<PeerTransfer>& transfers) = 0;
};

// A world of one: every collective is the identity (or a copy), nothing waits.
class LocalCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string backend() const override { return "local"; }
  WorkPtr all_reduce(torch::Tensor& tensor, ReduceOp op) override;
  WorkPtr reduce_scatter(torch::Tensor& output, const torch::Tensor& input, ReduceOp op) override;
  WorkPtr all_gather(torch::Tensor& output, const torch::Tensor& input) override;
  WorkPtr broadcast(torch::Tensor& tensor, int root) override;
  void barrier() override {}
  WorkPtr exchange(const std::vector<PeerTransfer>& transfers) override;  // throws: there is no peer
};

// Waits for every handle (null handles are skipped).
void wait_all(const std::vector<WorkPtr>& works);

// A host value reduced over every rank (collective; `device`: where the communicator's tensors
// live). It waits for the device, so the loop uses it on logging steps and at saves, not per step.
int64_t all_reduce_value(Communicator& comm, int64_t value, ReduceOp op, const torch::Device& device);

// Every rank's `text`, indexed by rank (collective; every rank gets all of them). `device`: where
// the communicator's tensors live. For small records (a checkpoint's file list), not bulk data.
std::vector<std::string> all_gather_text(Communicator& comm, const std::string& text, const torch::Device& device);

}  // namespace hftrain::parallel
