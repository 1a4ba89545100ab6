// The NCCL backend on one GPU: a communicator of one rank runs every collective the strategies
// use (through LibTorch's ProcessGroupNCCL of the wheel this build links). Two ranks need two GPUs
// (NCCL refuses two ranks on one device); tests/e2e/dist_test.sh covers them where there are.
#include "../../torch_catch.h"  // first: see the file

#include "parallel/comm/nccl_communicator.h"

#ifdef HFTRAIN_HAVE_NCCL
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#endif

using namespace hftrain;

TEST_CASE("NCCL: a communicator of one rank runs every collective on cuda:0", "[dist][gpu]") {
#ifndef HFTRAIN_HAVE_NCCL
  CHECK_FALSE(parallel::nccl_available());
  WARN("built without NCCL; skipped");
#else
  if (!torch::cuda::is_available()) {
    WARN("no CUDA device; skipped");
    return;
  }
  c10::intrusive_ptr<c10d::Store> store = c10::make_intrusive<c10d::HashStore>();
  auto comm = parallel::make_nccl_communicator(&store, /*rank=*/0, /*size=*/1, /*device_index=*/0, "test", nullptr);
  CHECK(comm->backend() == "nccl");
  CHECK(comm->rank() == 0);
  CHECK(comm->size() == 1);
  const auto on = torch::TensorOptions().device(torch::kCUDA, 0);
  for (auto dtype : {torch::kFloat32, torch::kBFloat16, torch::kFloat16, torch::kInt64}) {
    INFO(c10::toString(dtype));
    const auto values = torch::arange(6, on.dtype(dtype));
    auto x = values.clone();
    comm->all_reduce(x, parallel::ReduceOp::kSum)->wait();
    CHECK(torch::equal(x, values));
    comm->all_reduce(x, parallel::ReduceOp::kMax)->wait();
    CHECK(torch::equal(x, values));
    auto gathered = torch::zeros({6}, on.dtype(dtype));
    comm->all_gather(gathered, values)->wait();
    CHECK(torch::equal(gathered, values));
    auto scattered = torch::zeros({6}, on.dtype(dtype));
    comm->reduce_scatter(scattered, values, parallel::ReduceOp::kSum)->wait();
    CHECK(torch::equal(scattered, values));
    comm->broadcast(x, 0)->wait();
    CHECK(torch::equal(x, values));
  }
  comm->barrier();
  torch::cuda::synchronize();
#endif
}
