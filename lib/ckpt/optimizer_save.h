// How every rank saves its shard of the optimizer state into a checkpoint, inside the crash-safe
// CheckpointWriter protocol (writer.h):
//   1. rank 0 creates a staging folder beside the checkpoint's (optimizer_staging_dir in
//      layout.h) and tells every rank where it is (an all-gather);
//   2. every rank that holds a distinct shard (parallel::LocalOptimizerState::file >= 0) writes its
//      shard file there, fsynced, measuring size and checksum as it writes; replicas write nothing;
//   3. the ranks all-gather what they wrote, or why they failed: each learns whether all
//      succeeded, and on any failure every rank throws the same IoError and the folder goes;
//   4. rank 0's CheckpointWriter adopts the files (a rename: nothing is read again) and writes
//      optimizer/index.json; its manifest lists every file with its checksum, and commit()
//      publishes them together with the rest of the checkpoint.
// The shards have a staging folder of their own because rank 0's writer exists only inside its
// part of the save (Trainer::write_checkpoint), after the collectives. A crash at any moment leaves
// only .tmp-checkpoint-* folders, which the next run removes (remove_stale_staging); a failure
// removes them at once; earlier checkpoints are never touched.
// A multi-node job needs its run directory on a filesystem that every node shares (except hybrid,
// where only the first node of each data-parallel group writes: node 0 without pipeline stages): a
// rank that cannot see the folder fails the save and says so.
#pragma once

#include <cstdint>
#include <filesystem>

#include <torch/types.h>
#include <nlohmann/json.hpp>

#include "ckpt/writer.h"
#include "parallel/comm/communicator.h"
#include "parallel/data_parallel/optimizer_pieces.h"

namespace hftrain::ckpt {

class OptimizerStaging;

// The shard files of one save, staged until rank 0's writer adopts them. On rank 0, destroying it
// removes what was not adopted (a save that failed later).
class StagedOptimizer {
 public:
  StagedOptimizer() = default;
  ~StagedOptimizer();
  StagedOptimizer(StagedOptimizer&& other) noexcept;
  StagedOptimizer& operator=(StagedOptimizer&&) = delete;
  StagedOptimizer(const StagedOptimizer&) = delete;
  StagedOptimizer& operator=(const StagedOptimizer&) = delete;

  // What adopt_optimizer_shards() needs, on rank 0 (null on the others): {"pid": rank 0's process,
  // "files": [ManifestFile], "index": optimizer/index.json}.
  const nlohmann::json& handoff() const { return handoff_; }

 private:
  friend StagedOptimizer close_optimizer_staging(OptimizerStaging&&, parallel::Communicator&, const torch::Device&,
                                                 const nlohmann::json&, const nlohmann::json&);
  std::filesystem::path dir_;  // rank 0: the staging folder
  nlohmann::json handoff_;
};

// The staging folder of one save between steps 1 and 3 (a background save writes step 2 on a thread
// of its own). On rank 0, destroying it before close_optimizer_staging removes the folder.
class OptimizerStaging {
 public:
  OptimizerStaging() = default;
  ~OptimizerStaging();
  OptimizerStaging(OptimizerStaging&& other) noexcept;
  OptimizerStaging& operator=(OptimizerStaging&& other) noexcept;
  OptimizerStaging(const OptimizerStaging&) = delete;
  OptimizerStaging& operator=(const OptimizerStaging&) = delete;

  const std::filesystem::path& dir() const { return dir_; }  // on every rank
  int rank() const { return rank_; }

 private:
  friend OptimizerStaging open_optimizer_staging(const std::filesystem::path&, int64_t, parallel::Communicator&,
                                                 const torch::Device&);
  friend StagedOptimizer close_optimizer_staging(OptimizerStaging&&, parallel::Communicator&, const torch::Device&,
                                                 const nlohmann::json&, const nlohmann::json&);
  std::filesystem::path dir_;
  int rank_ = 0;
  bool owner_ = false;  // rank 0: removes the folder unless closed
};

// Step 1, on every rank of `comm` (collective). Throws IoError, on every rank alike, when rank 0
// cannot create the folder.
OptimizerStaging open_optimizer_staging(const std::filesystem::path& run_dir, int64_t step,
                                        parallel::Communicator& comm, const torch::Device& device);
// Step 2, on this rank alone (any thread; no collective, no device work: `local`'s pieces must be
// CPU tensors when it runs off the training thread): the shard file's record, null for a replica,
// or {"error", "hint"} when it could not be written. Never throws.
nlohmann::json write_staged_shard(const OptimizerStaging& staging, const parallel::LocalOptimizerState& local);
// Step 3, on every rank (collective): `mine` is this rank's write_staged_shard, `meta` its
// LocalOptimizerState::meta. Throws IoError, on every rank alike, when any rank could not write.
StagedOptimizer close_optimizer_staging(OptimizerStaging&& staging, parallel::Communicator& comm,
                                        const torch::Device& device, const nlohmann::json& mine,
                                        const nlohmann::json& meta);

// Steps 1 to 3, on every rank of `comm` (collective). `device`: where the communicator's tensors
// live. Throws IoError, on every rank alike, when rank 0 cannot create the folder or any rank
// cannot write its file.
StagedOptimizer stage_optimizer_shards(const std::filesystem::path& run_dir, int64_t step,
                                       parallel::Communicator& comm, const torch::Device& device,
                                       const parallel::LocalOptimizerState& local);

// Step 4, on rank 0: moves the staged files into `writer` (as optimizer/shard-*.safetensors) and
// adds optimizer/index.json. Throws IoError.
void adopt_optimizer_shards(CheckpointWriter& writer, const nlohmann::json& handoff);

}  // namespace hftrain::ckpt
