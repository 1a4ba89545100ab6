#include "parallel/comm/nccl_communicator.h"

#include "util/error.h"

#ifdef HFTRAIN_HAVE_NCCL
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#include <torch/torch.h>
#endif

namespace hftrain::parallel {

#ifdef HFTRAIN_HAVE_NCCL
namespace {

std::chrono::milliseconds budget_ms(Monitor* monitor) {
  return std::chrono::milliseconds(static_cast<int64_t>((monitor ? monitor->budget_seconds() : 600.0) * 1000.0));
}

c10d::ReduceOp c10d_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return c10d::ReduceOp::SUM;
    case ReduceOp::kMax: return c10d::ReduceOp::MAX;
    case ReduceOp::kMin: return c10d::ReduceOp::MIN;
  }
  return c10d::ReduceOp::SUM;
}

class NcclWork final : public Work {
 public:
  NcclWork(c10::intrusive_ptr<c10d::Work> work, Monitor* monitor, std::string what, uint64_t seq)
      : work_(std::move(work)), monitor_(monitor), what_(std::move(what)), seq_(seq) {}
  void wait() override {
    try {
      // Orders the collective before later work on the current stream; the watchdog enforces
      // the timeout given at creation.
      work_->wait(budget_ms(monitor_));
    } catch (const std::exception& e) {
      const std::string where = monitor_ ? monitor_->diagnose(what_, seq_) : what_;
      throw util::DistributedError(where + " (NCCL: " + std::string(e.what()).substr(0, 300) + ")",
                                   "if a rank is slow rather than stuck, raise distributed.timeout");
    }
  }

 private:
  c10::intrusive_ptr<c10d::Work> work_;
  Monitor* monitor_;
  std::string what_;
  uint64_t seq_;
};

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(c10::intrusive_ptr<c10d::ProcessGroupNCCL> pg, int rank, int size, Monitor* monitor)
      : pg_(std::move(pg)), rank_(rank), size_(size), monitor_(monitor) {}
  ~NcclCommunicator() override {
    try {
      pg_->shutdown();
    } catch (...) {
    }
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "nccl"; }

  WorkPtr all_reduce(torch::Tensor& t, ReduceOp op) override {
    std::vector<at::Tensor> v{t};
    c10d::AllreduceOptions o;
    o.reduceOp = c10d_op(op);
    return wrap(pg_->allreduce(v, o), "all_reduce");
  }
  WorkPtr reduce_scatter(torch::Tensor& out, const torch::Tensor& in, ReduceOp op) override {
    at::Tensor input = in;
    c10d::ReduceScatterOptions o;
    o.reduceOp = c10d_op(op);
    return wrap(pg_->_reduce_scatter_base(out, input, o), "reduce_scatter");
  }
  WorkPtr all_gather(torch::Tensor& out, const torch::Tensor& in) override {
    at::Tensor input = in;
    return wrap(pg_->_allgather_base(out, input), "all_gather");
  }
  WorkPtr broadcast(torch::Tensor& t, int root) override {
    std::vector<at::Tensor> v{t};
    c10d::BroadcastOptions o;
    o.rootRank = root;
    return wrap(pg_->broadcast(v, o), "broadcast");
  }
  void barrier() override { wrap(pg_->barrier(), "barrier")->wait(); }
  WorkPtr exchange(const std::vector<PeerTransfer>& transfers) override {
    // Coalesced into one NCCL group: a send and a receive between the same two ranks on one
    // stream would otherwise wait for each other.
    pg_->startCoalescing();
    for (const auto& t : transfers) {
      std::vector<at::Tensor> v{t.tensor};
      if (t.send) {
        pg_->send(v, t.peer, 0);
      } else {
        pg_->recv(v, t.peer, 0);
      }
    }
    return wrap(pg_->endCoalescing(), "point-to-point exchange", /*counted=*/false);
  }

 private:
  // `counted`: a collective in the monitor's count (point-to-point exchanges are not: the stages of
  // a pipeline make different numbers of them).
  WorkPtr wrap(c10::intrusive_ptr<c10d::Work> w, const char* what, bool counted = true) {
    const uint64_t seq = !monitor_ ? 0 : counted ? monitor_->begin_collective() : monitor_->collectives();
    return std::make_shared<NcclWork>(std::move(w), monitor_, what, seq);
  }

  c10::intrusive_ptr<c10d::ProcessGroupNCCL> pg_;
  int rank_, size_;
  Monitor* monitor_;
};

}  // namespace

bool nccl_available() { return true; }

std::shared_ptr<Communicator> make_nccl_communicator(void* c10d_store, int rank, int size, int device_index,
                                                     const std::string& group, Monitor* monitor) {
  auto& base = *static_cast<c10::intrusive_ptr<c10d::Store>*>(c10d_store);
  auto store = c10::make_intrusive<c10d::PrefixStore>("nccl/" + group, base);
  auto options = c10d::ProcessGroupNCCL::Options::create();
  // NCCL's watchdog is set once for the group's life: give it the longest phase budget (a
  // checkpoint's or the data phase's), and let each wait enforce its own phase's budget.
  options->timeout = std::chrono::milliseconds(
      static_cast<int64_t>((monitor ? monitor->budgets().longest() : PhaseBudgets{}.longest()) * 1000.0));
  auto pg = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, size, options);
  // Binds the communicator to this rank's device and connects now, inside the start-up budget,
  // rather than at the first collective.
  const at::Device device(at::kCUDA, static_cast<c10::DeviceIndex>(device_index));
  pg->setBoundDeviceId(device);
  pg->eagerConnectSingleDevice(device);
  return std::make_shared<NcclCommunicator>(std::move(pg), rank, size, monitor);
}

#else

bool nccl_available() { return false; }

std::shared_ptr<Communicator> make_nccl_communicator(void*, int, int, int, const std::string&, Monitor*) {
  throw util::ConfigError(
      "this hftrain was built without NCCL (no CUDA toolkit at build time)",
      "rebuild where /usr/local/cuda and NCCL are installed, or use distributed.backend=mpi on CPUs");
}

#endif

}  // namespace hftrain::parallel
