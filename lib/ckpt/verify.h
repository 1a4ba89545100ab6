// Checking a checkpoint against its manifest, and choosing the checkpoint to resume from. A bad
// checkpoint is an answer here, not an exception: every problem found is listed, each naming the
// file, so `hftrain verify` can report them all and resume can say why it skipped one.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "ckpt/layout.h"
#include "ckpt/manifest.h"

namespace hftrain::ckpt {

struct VerifyReport {
  std::filesystem::path dir;
  std::optional<Manifest> manifest;   // when manifest.json could be read
  std::vector<std::string> problems;  // the checkpoint cannot be trusted
  std::vector<std::string> notes;     // worth saying, harmless (files the manifest does not list)
  bool ok() const { return problems.empty(); }
};

// Checks `dir`: manifest.json present and valid, its step equal to the folder name's, and every
// file it lists present with the recorded size and checksum (the whole file is read); for a
// .safetensors file also a readable header whose tensor names, dtypes and shapes equal the
// manifest's; optimizer/index.json, when listed, parsed and matching the shard files it names
// (ckpt/optimizer_index.h). Never throws for bad content.
VerifyReport verify_checkpoint(const std::filesystem::path& dir);

struct SkippedCheckpoint {
  CheckpointEntry entry;
  std::vector<std::string> problems;
};

struct ResumeChoice {
  CheckpointEntry chosen;
  std::vector<SkippedCheckpoint>
      skipped;  // newer than `chosen` and failed verification, newest first
};

// The newest checkpoint of `run_dir` (by step) that verifies, of those before step `before` when
// given. nullopt when none does (or there are none); then `failed`, when given, receives every
// checkpoint with its problems, newest first. Throws IoError when `run_dir` cannot be listed.
std::optional<ResumeChoice> newest_verified(const std::filesystem::path& run_dir,
                                            std::vector<SkippedCheckpoint>* failed = nullptr,
                                            std::optional<int64_t> before = std::nullopt);

}  // namespace hftrain::ckpt
