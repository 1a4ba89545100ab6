#include "train/step/stop_agreement.h"

#include <algorithm>
#include <system_error>

#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/torch.h>

namespace hftrain::train {

StopAgreement::StopAgreement(parallel::World& world, const std::atomic<int>* signal, std::filesystem::path run_dir,
                             const torch::Device& device)
    : world_(world), signal_(signal), run_dir_(std::move(run_dir)), device_(device) {
  if (world_.is_main()) run_dir_id_ = ckpt::identify_dir(run_dir_);
}

std::pair<int64_t, int64_t> StopAgreement::look(int64_t /*step*/) {
  const int64_t signal = signal_ ? signal_->load() : 0;
  int64_t lost = 0;
  if (world_.is_main() && !ckpt::still_there(run_dir_, run_dir_id_)) {
    lost = 1;
    std::error_code ec;
    std::filesystem::create_directories(run_dir_, ec);
    run_dir_id_ = ckpt::identify_dir(run_dir_);
  }
  return {signal, lost};
}

StopAgreement::Posted StopAgreement::post(int64_t signal, int64_t lost, int64_t written_through,
                                          int64_t published_through, int64_t step) {
  Posted posted;
  posted.step = step;
  // Filled on the device (a copy from pageable host memory would wait for the stream). The max
  // of -written_through is minus the smallest over the ranks (and so for published_through).
  torch::Tensor view = torch::full({4}, signal, torch::TensorOptions().dtype(torch::kInt64).device(device_));
  view.narrow(0, 1, 1).fill_(lost);
  view.narrow(0, 2, 1).fill_(-written_through);
  view.narrow(0, 3, 1).fill_(-published_through);
  world_.comm().all_reduce(view, parallel::ReduceOp::kMax)->wait();  // on a GPU: ordered on the stream
  if (device_.is_cuda()) {
    posted.host = torch::empty({4}, torch::TensorOptions().dtype(torch::kInt64).pinned_memory(true));
    posted.host.copy_(view, /*non_blocking=*/true);
    const c10::impl::DeviceGuardImplInterface* impl = c10::impl::getDeviceGuardImpl(device_.type());
    posted.ready.emplace(device_.type());
    posted.ready->record(impl->getStream(device_));
  } else {
    posted.host = view;
  }
  return posted;
}

StopAgreement::Decision StopAgreement::read(Posted& posted) {
  if (posted.ready) posted.ready->synchronize();  // the device is past that step by now
  const auto* v = posted.host.data_ptr<int64_t>();
  return {.signal = static_cast<int>(v[0]),
          .run_dir_lost = v[1] != 0,
          .noticed_after = posted.step,
          .written_through = -v[2],
          .published_through = -v[3]};
}

StopAgreement::Decision StopAgreement::after_step(int64_t step, bool now, int64_t written_through,
                                                  int64_t published_through) {
  const auto [signal, lost] = look(step);
  if (world_.size() == 1) {
    return {.signal = static_cast<int>(signal),
            .run_dir_lost = lost != 0,
            .noticed_after = step,
            .written_through = written_through,
            .published_through = published_through};
  }
  Posted mine = post(signal, lost, written_through, published_through, step);
  Decision decision;
  if (pending_) decision = read(*pending_);
  pending_.reset();
  if (decision.stop()) return decision;  // agreed on the earlier step's view: stop after this one
  if (!now) {
    pending_ = std::move(mine);
    // The earlier step's background-save view, if any.
    return {.written_through = decision.written_through, .published_through = decision.published_through};
  }
  return read(mine);
}

}  // namespace hftrain::train
