#include "parallel/comm/mpi_communicator.h"

#include <mpi.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include <torch/torch.h>

#include "parallel/comm/ompi_server.h"
#include "util/error.h"
#include "util/log.h"

namespace hftrain::parallel {
namespace {

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return std::string(text, static_cast<size_t>(len));
}

void check_mpi(int code, const std::string& what) {
  if (code != MPI_SUCCESS) {
    throw util::DistributedError("MPI: " + what + " failed: " + mpi_error_text(code),
                                 "another rank probably ended; see its log (train-rank<N>.log)");
  }
}

// The state of one queued MPI call.
struct CallState {
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  int code = MPI_SUCCESS;
};

// The thread that makes every MPI call after start-up.
class Engine {
 public:
  static Engine& instance() {
    static Engine engine;
    return engine;
  }

  std::shared_ptr<CallState> submit(std::function<int()> call) {
    auto state = std::make_shared<CallState>();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
      queue_.push_back({std::move(call), state});
    }
    cv_.notify_one();
    return state;
  }

  // Stops the thread when it is idle; returns false when it is stuck in a call (after a timeout).
  bool stop() {
    if (abandoned_) return false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_one();
    if (thread_.joinable()) thread_.join();
    return true;
  }
  void abandon() { abandoned_ = true; }
  bool abandoned() const { return abandoned_; }

  ~Engine() {
    if (thread_.joinable()) {
      if (abandoned_) {
        thread_.detach();
      } else {
        stop();
      }
    }
  }

 private:
  struct Call {
    std::function<int()> run;
    std::shared_ptr<CallState> state;
  };

  void loop() {
    for (;;) {
      Call call;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;
        call = std::move(queue_.front());
        queue_.pop_front();
      }
      const int code = call.run();
      {
        std::lock_guard<std::mutex> lock(call.state->mutex);
        call.state->done = true;
        call.state->code = code;
      }
      call.state->cv.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Call> queue_;
  bool stop_ = false;
  std::atomic<bool> abandoned_{false};
  std::thread thread_;
};

class MpiWork final : public Work {
 public:
  MpiWork(std::shared_ptr<CallState> state, Monitor* monitor, std::string what, uint64_t seq)
      : state_(std::move(state)), monitor_(monitor), what_(std::move(what)), seq_(seq) {}

  void wait() override {
    std::unique_lock<std::mutex> lock(state_->mutex);
    const double budget = monitor_ ? monitor_->budget_seconds() : 3600.0;
    const auto deadline =
        std::chrono::steady_clock::now() +
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(budget));
    if (!state_->cv.wait_until(lock, deadline, [this] { return state_->done; })) {
      Engine::instance().abandon();
      const std::string message = monitor_ ? monitor_->diagnose(what_, seq_) : what_ + " timed out";
      throw util::DistributedError(message, "if a rank is slow rather than stuck, raise the phase's budget "
                                            "(distributed.timeout, distributed.*_timeout)");
    }
    check_mpi(state_->code, what_);
  }

 private:
  std::shared_ptr<CallState> state_;
  Monitor* monitor_;
  std::string what_;
  uint64_t seq_;
};

MPI_Datatype mpi_type(const torch::Tensor& t, bool reducing) {
  switch (t.scalar_type()) {
    case torch::kFloat32: return MPI_FLOAT;
    case torch::kFloat64: return MPI_DOUBLE;
    case torch::kInt64: return MPI_INT64_T;
    case torch::kInt32: return MPI_INT32_T;
    case torch::kUInt8: return MPI_UINT8_T;
    case torch::kInt8: return MPI_INT8_T;
    case torch::kBool: return MPI_UINT8_T;
    case torch::kBFloat16:
    case torch::kFloat16:
      if (!reducing) return MPI_UINT16_T;  // moved, not added: any 16-bit type will do
      break;
    default: break;
  }
  throw util::ConfigError(std::string("the MPI backend cannot reduce ") + std::string(c10::toString(t.scalar_type())) +
                              " tensors",
                          "use distributed.reduce_dtype=fp32 on the CPU");
}

MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return MPI_SUM;
    case ReduceOp::kMax: return MPI_MAX;
    case ReduceOp::kMin: return MPI_MIN;
  }
  return MPI_SUM;
}

void check_cpu(const torch::Tensor& t, const char* what) {
  if (!t.device().is_cpu() || !t.is_contiguous()) {
    throw util::ConfigError(std::string("the MPI backend takes contiguous CPU tensors (") + what + ")",
                            "use distributed.backend=nccl for CUDA tensors");
  }
}

int mpi_count(const torch::Tensor& t) {
  if (t.numel() > std::numeric_limits<int>::max()) {
    throw util::ConfigError("a tensor of " + std::to_string(t.numel()) + " elements is too large for one MPI call",
                            "lower distributed.bucket_size");
  }
  return static_cast<int>(t.numel());
}

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(MPI_Comm comm, Monitor* monitor) : comm_(comm), monitor_(monitor) {
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  // Frees the communicator (local; MPI_Finalize then disconnects the ranks joined through
  // MPI_Comm_connect/accept, once, over the whole world).
  ~MpiCommunicator() override {
    try {
      submit("free", [comm = comm_]() mutable { return MPI_Comm_free(&comm); })->wait();
    } catch (const std::exception&) {
      // A peer is gone: MPI_Finalize copes with what is left.
    }
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "mpi"; }
  MPI_Comm handle() const { return comm_; }

  WorkPtr all_reduce(torch::Tensor& t, ReduceOp op) override {
    check_cpu(t, "all_reduce");
    const MPI_Datatype type = mpi_type(t, true);
    const int count = mpi_count(t);
    return submit("all_reduce", [t, type, count, op, comm = comm_] {
      return MPI_Allreduce(MPI_IN_PLACE, t.data_ptr(), count, type, mpi_op(op), comm);
    });
  }

  WorkPtr reduce_scatter(torch::Tensor& out, const torch::Tensor& in, ReduceOp op) override {
    check_cpu(out, "reduce_scatter"), check_cpu(in, "reduce_scatter");
    const MPI_Datatype type = mpi_type(in, true);
    const int count = mpi_count(out);
    return submit("reduce_scatter", [out, in, type, count, op, comm = comm_] {
      return MPI_Reduce_scatter_block(in.data_ptr(), out.data_ptr(), count, type, mpi_op(op), comm);
    });
  }

  WorkPtr all_gather(torch::Tensor& out, const torch::Tensor& in) override {
    check_cpu(out, "all_gather"), check_cpu(in, "all_gather");
    const MPI_Datatype type = mpi_type(in, false);
    const int count = mpi_count(in);
    return submit("all_gather", [out, in, type, count, comm = comm_] {
      return MPI_Allgather(in.data_ptr(), count, type, out.data_ptr(), count, type, comm);
    });
  }

  WorkPtr broadcast(torch::Tensor& t, int root) override {
    check_cpu(t, "broadcast");
    const MPI_Datatype type = mpi_type(t, false);
    const int count = mpi_count(t);
    return submit("broadcast", [t, type, count, root, comm = comm_] {
      return MPI_Bcast(t.data_ptr(), count, type, root, comm);
    });
  }

  void barrier() override {
    submit("barrier", [comm = comm_] { return MPI_Barrier(comm); })->wait();
  }

  WorkPtr exchange(const std::vector<PeerTransfer>& transfers) override {
    std::vector<int> counts;
    std::vector<MPI_Datatype> types;
    for (const auto& t : transfers) {
      check_cpu(t.tensor, "exchange");
      types.push_back(mpi_type(t.tensor, false));
      counts.push_back(mpi_count(t.tensor));
    }
    // Not counted as a collective: the stages of a pipeline exchange different numbers of times,
    // and the count is what a timeout's diagnosis compares across ranks.
    return submit("point-to-point exchange", [transfers, counts, types, comm = comm_] {
      std::vector<MPI_Request> requests(transfers.size(), MPI_REQUEST_NULL);
      for (size_t i = 0; i < transfers.size(); ++i) {
        const auto& t = transfers[i];
        const int code = t.send ? MPI_Isend(t.tensor.data_ptr(), counts[i], types[i], t.peer, 0, comm, &requests[i])
                                : MPI_Irecv(t.tensor.data_ptr(), counts[i], types[i], t.peer, 0, comm, &requests[i]);
        if (code != MPI_SUCCESS) {
          // What was started completes before the buffers may go (their owners outlive this call).
          MPI_Waitall(static_cast<int>(i), requests.data(), MPI_STATUSES_IGNORE);
          return code;
        }
      }
      return MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
    }, /*counted=*/false);
  }

  WorkPtr submit(const char* what, std::function<int()> call, bool counted = true) {
    const uint64_t seq = !monitor_ ? 0 : counted ? monitor_->begin_collective() : monitor_->collectives();
    return std::make_shared<MpiWork>(Engine::instance().submit(std::move(call)), monitor_, what, seq);
  }

 private:
  MPI_Comm comm_;
  Monitor* monitor_;
  int rank_ = 0, size_ = 1;
};

}  // namespace

void mpi_init() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return;
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
    throw util::DistributedError("MPI_Init failed", "check the Open MPI installation (mpirun --version)");
  }
  if (provided < MPI_THREAD_SERIALIZED) {
    throw util::DistributedError("this MPI does not allow calls from a second thread (MPI_THREAD_SERIALIZED)",
                                 "use Open MPI 4 or newer");
  }
}

bool mpi_is_initialized() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

void mpi_finalize() {
  if (mpi_is_initialized() && Engine::instance().stop()) MPI_Finalize();
  stop_ompi_server();
}

std::shared_ptr<Communicator> mpi_world(Monitor* monitor) {
  MPI_Comm comm;
  check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &comm), "MPI_Comm_dup");
  return std::make_shared<MpiCommunicator>(comm, monitor);
}

std::string mpi_world_broadcast(const std::string& value, int world_rank) {
  int size = static_cast<int>(value.size());
  check_mpi(MPI_Bcast(&size, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
  std::string out = world_rank == 0 ? value : std::string(static_cast<size_t>(size), '\0');
  check_mpi(MPI_Bcast(out.data(), size, MPI_CHAR, 0, MPI_COMM_WORLD), "MPI_Bcast");
  return out;
}

std::shared_ptr<Communicator> mpi_join(KeyValueStore& store, int rank, int world_size, Monitor* monitor) {
  allow_mpi_as_root();
  const double budget = monitor ? monitor->budget_seconds() : 600;
  const std::string uri = rank == 0 ? start_ompi_server(budget) : store.get("mpi/server_uri");
  if (rank == 0) store.set("mpi/server_uri", uri);
  setenv("OMPI_MCA_pmix_server_uri", uri.c_str(), 1);
  mpi_init();

  char port[MPI_MAX_PORT_NAME] = {};
  MPI_Comm comm = MPI_COMM_NULL;
  if (rank == 0) {
    check_mpi(MPI_Open_port(MPI_INFO_NULL, port), "MPI_Open_port");
    store.set("mpi/port", port);
    check_mpi(MPI_Comm_dup(MPI_COMM_SELF, &comm), "MPI_Comm_dup");
    store.set("mpi/turn/1", "go");
  } else {
    const std::string name = store.get("mpi/port");
    name.copy(port, MPI_MAX_PORT_NAME - 1);
    store.get("mpi/turn/" + std::to_string(rank));  // joiners come in rank order
    MPI_Comm inter;
    check_mpi(MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter), "MPI_Comm_connect");
    check_mpi(MPI_Intercomm_merge(inter, 1, &comm), "MPI_Intercomm_merge");
    MPI_Comm_free(&inter);
  }
  // Everyone already in takes part in accepting each later rank.
  for (int next = std::max(rank + 1, 1); next < world_size; ++next) {
    MPI_Comm inter, merged;
    check_mpi(MPI_Comm_accept(port, MPI_INFO_NULL, 0, comm, &inter), "MPI_Comm_accept");
    check_mpi(MPI_Intercomm_merge(inter, 0, &merged), "MPI_Intercomm_merge");
    MPI_Comm_free(&inter);
    MPI_Comm_free(&comm);
    comm = merged;
    if (rank == 0 && next + 1 < world_size) store.set("mpi/turn/" + std::to_string(next + 1), "go");
  }
  if (rank == 0) MPI_Close_port(port);
  auto result = std::make_shared<MpiCommunicator>(comm, monitor);
  if (result->rank() != rank || result->size() != world_size) {
    throw util::DistributedError("MPI joined the ranks out of order (rank " + std::to_string(rank) + " became " +
                                     std::to_string(result->rank()) + " of " + std::to_string(result->size()) + ")",
                                 "report this as a bug");
  }
  return result;
}

std::shared_ptr<Communicator> mpi_split(Communicator& parent, int color, int key, Monitor* monitor) {
  auto* mpi = dynamic_cast<MpiCommunicator*>(&parent);
  if (!mpi) throw util::DistributedError("mpi_split needs an MPI communicator", "report this as a bug");
  auto out = std::make_shared<MPI_Comm>(MPI_COMM_NULL);
  auto work = mpi->submit("split", [comm = mpi->handle(), color, key, out] {
    return MPI_Comm_split(comm, color, key, out.get());
  });
  work->wait();
  return std::make_shared<MpiCommunicator>(*out, monitor);
}

}  // namespace hftrain::parallel
