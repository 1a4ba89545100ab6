#include "train/state/background_save.h"

#include <exception>
#include <string>
#include <utility>

namespace hftrain::train {

BackgroundSave::BackgroundSave(Job job) : job_(std::move(job)), started_(std::chrono::steady_clock::now()) {
  thread_ = std::thread([this] { run(); });
}

BackgroundSave::~BackgroundSave() {
  if (publisher_.joinable()) publisher_.join();
  if (thread_.joinable()) thread_.join();
}

void BackgroundSave::run() noexcept {
  const auto t0 = std::chrono::steady_clock::now();
  try {
    if (job_.copies) job_.copies->wait();
  } catch (const std::exception& e) {
    result_.error = util::IoError(std::string("the host copy of the checkpoint failed: ") + e.what(),
                                  "report this as a bug");
  }
  if (!result_.error) {
    result_.shard_record = ckpt::write_staged_shard(job_.staging, job_.shard);
  } else if (job_.shard.file >= 0) {  // every rank learns of it when the shards are exchanged
    result_.shard_record = {{"error", result_.error->what()}, {"hint", result_.error->hint()}};
  }
  if (job_.main && !result_.error) {
    try {
      auto writer = std::make_unique<ckpt::CheckpointWriter>(job_.run_dir, job_.snapshot.step);
      write_model_files(*writer, job_.snapshot);
      write_state_files(*writer, job_.snapshot);
      result_.writer = std::move(writer);
    } catch (const util::IoError& e) {
      result_.error = e;
    } catch (const std::exception& e) {
      result_.error = util::IoError(std::string("writing the checkpoint failed: ") + e.what(), "report this as a bug");
    }
  }
  // The tensors are written: the host copies can go (the snapshot keeps the rest).
  job_.shard.pieces.clear();
  job_.snapshot.weights.clear();
  job_.snapshot.adapter_tensors.clear();
  result_.write_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  written_.store(true, std::memory_order_release);
}

BackgroundSave::Result BackgroundSave::take() {
  if (thread_.joinable()) thread_.join();
  return std::move(result_);
}

void BackgroundSave::publish(std::function<Published()> work) {
  publishing_ = true;
  publisher_ = std::thread([this, work = std::move(work)] {
    published_result_ = work();
    published_.store(true, std::memory_order_release);
  });
}

void BackgroundSave::published_as(Published published) {
  publishing_ = true;
  published_result_ = std::move(published);
  published_.store(true, std::memory_order_release);
}

BackgroundSave::Published BackgroundSave::take_published() {
  if (publisher_.joinable()) publisher_.join();
  return std::move(published_result_);
}

}  // namespace hftrain::train
