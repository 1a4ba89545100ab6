// checkpoint.async: one checkpoint written by threads of its own while training goes on.
//
// The training thread does every collective part of a save at once, as a save written at once does
// (the generator states, the logging window, rank 0's staging folder for the optimizer shards, the
// whole-model gathers), copies the tensors into host memory (HostCopies) and serialises the rest
// (CheckpointSnapshot). Then, in two phases, each on a thread:
//   1. writing: each rank writes its optimizer shard file and the main rank every other file into a
//      CheckpointWriter's staging folder, each fsynced and checksummed;
//   2. publishing (the main rank), once every rank has written (the ranks agree on it in the step's
//      stop agreement, train/step/stop_agreement.h, and exchange their shard records on the training
//      thread): the shards adopted, the manifest, the rename into place, `latest`, keep_last's
//      rotation.
// When every rank agrees the main rank has published, the training thread tells the callbacks and
// the ranks whether it worked (Trainer::complete_background_save). The next save, the end of the
// run and a rollback wait for both phases. A crash at any moment leaves only .tmp-checkpoint-*
// folders, which the next run removes.
//
// The threads run no collective, no callback and no device work (the writer waits for the queued
// host copies on an event); they never throw: what failed comes back in Result and Published.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "ckpt/optimizer_save.h"
#include "ckpt/writer.h"
#include "train/state/checkpoint_snapshot.h"
#include "util/error.h"

namespace hftrain::train {

class BackgroundSave {
 public:
  struct Job {
    std::filesystem::path run_dir;
    CheckpointSnapshot snapshot;  // the main rank's files (empty on the others)
    bool main = false;            // this rank writes the checkpoint's files
    ckpt::OptimizerStaging staging;
    parallel::LocalOptimizerState shard;  // host copies of this rank's pieces
    nlohmann::json shard_meta;
    std::shared_ptr<const HostCopies> copies;  // waited for before writing
  };
  struct Result {
    nlohmann::json shard_record;                     // write_staged_shard's
    std::unique_ptr<ckpt::CheckpointWriter> writer;  // main rank: every file but the optimizer's, written
    std::optional<util::IoError> error;              // main rank: why its files could not be written
    double write_ms = 0;
  };

  // Phase 2's outcome on the main rank (the others: the checkpoint's path).
  struct Published {
    std::filesystem::path dir;
    std::vector<std::filesystem::path> removed;  // rotated away
    std::optional<util::IoError> error;
  };

  // Starts phase 1.
  explicit BackgroundSave(Job job);
  // Joins the threads (a save not published is dropped: its staging folders go).
  ~BackgroundSave();
  BackgroundSave(const BackgroundSave&) = delete;
  BackgroundSave& operator=(const BackgroundSave&) = delete;

  int64_t step() const { return job_.snapshot.step; }
  // Whether the thread has written everything (or failed); never blocks.
  bool written() const { return written_.load(std::memory_order_acquire); }
  // Waits for phase 1, then hands over what it wrote and the staging (once).
  Result take();
  // Starts phase 2 on a thread: `work` publishes (never throws).
  void publish(std::function<Published()> work);
  // Phase 2 done already (a rank with nothing to publish, or the main rank's failure known).
  void published_as(Published published);
  bool publishing() const { return publishing_; }
  // Whether phase 2 is done; never blocks.
  bool published() const { return published_.load(std::memory_order_acquire); }
  // Waits for phase 2 and hands over its outcome (once).
  Published take_published();
  ckpt::OptimizerStaging& staging() { return job_.staging; }
  const nlohmann::json& shard_meta() const { return job_.shard_meta; }
  // The snapshot's records (its tensors are gone once written): read after take().
  const CheckpointSnapshot& snapshot() const { return job_.snapshot; }
  // When the save started (for the time it took).
  std::chrono::steady_clock::time_point started() const { return started_; }

 private:
  void run() noexcept;

  Job job_;
  Result result_;
  std::atomic<bool> written_{false};
  std::chrono::steady_clock::time_point started_;
  std::thread thread_;
  bool publishing_ = false;
  Published published_result_;
  std::atomic<bool> published_{false};
  std::thread publisher_;
};

}  // namespace hftrain::train
