// NCCL for CUDA tensors, through LibTorch's own c10d::ProcessGroupNCCL (the wheel ships it with
// its headers; its watchdog aborts a communicator whose collective overran the budget). Built
// where the CUDA toolkit and NCCL are found (HFTRAIN_HAVE_NCCL); elsewhere make_nccl_communicator
// throws a clear error.
#pragma once

#include <memory>
#include <string>

#include "parallel/comm/communicator.h"
#include "parallel/comm/monitor.h"

namespace hftrain::parallel {

bool nccl_available();

// A communicator of `size` ranks over `c10d_store` (a c10::intrusive_ptr<c10d::Store>*, opaque so
// that this header stays free of c10d), with the current phase's budget as NCCL's timeout. `group`
// names sub-communicators (hybrid sharding) so their store keys do not collide.
std::shared_ptr<Communicator> make_nccl_communicator(void* c10d_store, int rank, int size, int device_index,
                                                     const std::string& group, Monitor* monitor);

}  // namespace hftrain::parallel
