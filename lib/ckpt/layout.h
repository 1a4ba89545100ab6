// Where checkpoints live in a run directory:
//   <run_dir>/checkpoint-<step>/            one committed checkpoint (manifest.json inside, written
//   last) <run_dir>/latest                        "checkpoint-<step>\n", updated atomically after
//   each commit <run_dir>/.tmp-checkpoint-<step>-<pid>/ a save in progress (or left by a crash)
//   <run_dir>/.tmp-deleting-checkpoint-<step>-<pid>/  a rotated-out checkpoint being removed
// Checkpoints are ordered by step number, never by name (checkpoint-10 comes after checkpoint-9).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hftrain::ckpt {

inline constexpr const char* kManifestFile = "manifest.json";
inline constexpr const char* kLatestFile = "latest";
inline constexpr std::string_view kCheckpointPrefix = "checkpoint-";
inline constexpr std::string_view kStagingPrefix = ".tmp-checkpoint-";
inline constexpr std::string_view kDeletingPrefix = ".tmp-deleting-checkpoint-";

// The optimizer state inside a checkpoint (ckpt/optimizer_index.h): one shard file per rank that
// holds a distinct shard, and rank 0's index of where each tensor's elements lie.
inline constexpr const char* kOptimizerIndexFile = "optimizer/index.json";
// Before every rank wrote its shard, rank 0 wrote the whole state into these two (still read).
inline constexpr const char* kLegacyOptimizerTensors = "optimizer.safetensors";
inline constexpr const char* kLegacyOptimizerMeta = "optimizer.json";

// "checkpoint-<step>".
std::string checkpoint_dir_name(int64_t step);

// "optimizer/shard-<file>-of-<num_files>.safetensors", numbered from 0, each number padded with
// zeros to five digits or the width of `num_files`.
std::string optimizer_shard_name(int file, int num_files);

// Where the ranks write their optimizer shards while rank 0 (process `pid`) saves checkpoint
// `step`: <run_dir>/.tmp-checkpoint-<step>-<pid>-optimizer/, a staging folder of its own, so
// a crash leaves nothing that remove_stale_staging() would not clean up.
std::filesystem::path optimizer_staging_dir(const std::filesystem::path& run_dir, int64_t step,
                                            int64_t pid);

// The step of a checkpoint folder name: exactly "checkpoint-" and the canonical decimal digits of
// a step (no sign, no leading zeros, fits int64); nullopt for anything else.
std::optional<int64_t> parse_checkpoint_step(std::string_view dir_name);

struct CheckpointEntry {
  int64_t step = 0;
  std::filesystem::path dir;
};

// The checkpoint folders of `run_dir`, ascending by step. Files, staging folders and names that do
// not parse are ignored; a missing `run_dir` has none. Throws IoError when it cannot be listed.
std::vector<CheckpointEntry> list_checkpoints(const std::filesystem::path& run_dir);

bool has_checkpoints(const std::filesystem::path& run_dir);

// Removes the staging (.tmp-checkpoint-*) and half-deleted (.tmp-deleting-checkpoint-*) folders
// that crashed saves and rotations left, logging each; returns them. Call it only while no other
// process saves into `run_dir`. Throws IoError when `run_dir` cannot be listed or a folder cannot
// be removed.
std::vector<std::filesystem::path> remove_stale_staging(const std::filesystem::path& run_dir);

}  // namespace hftrain::ckpt
