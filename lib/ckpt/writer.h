// Writing one checkpoint crash-safely. Files are staged in <run_dir>/.tmp-checkpoint-<step>-<pid>/,
// each written through util::FileWriter (fsynced, checksummed while written, never re-read);
// commit() writes manifest.json last, fsyncs the folder, renames it to <run_dir>/checkpoint-<step>
// (atomically replacing an existing one), fsyncs <run_dir>, then updates <run_dir>/latest. A crash
// at any instant leaves every committed checkpoint and `latest` as they were; a writer destroyed
// without commit() (an exception, a full disk) removes its staging folder.
//
// Test hook: HFTRAIN_TEST_CRASH_IN_SAVE=<step>:<n> makes the writer for checkpoint <step>
// raise(SIGKILL) right after its n-th file is closed: n=0 right after creating the staging
// folder, n = (number of files)+1 after manifest.json, before the rename. Other values are
// ignored. HFTRAIN_TEST_SLOW_SAVE=<ms> (at most 6 digits) makes every writer sleep that long after
// each file, so that tests can land a signal or a SIGKILL inside a (background) save.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "ckpt/manifest.h"
#include "model/weights/safetensors.h"
#include "util/env.h"

namespace hftrain::util {
class FileWriter;
}

namespace hftrain::ckpt {

inline constexpr const char* kCrashHookEnv = "HFTRAIN_TEST_CRASH_IN_SAVE";
inline constexpr const char* kSlowHookEnv = "HFTRAIN_TEST_SLOW_SAVE";

class CheckpointWriter {
 public:
  // Creates `run_dir` if needed and the staging folder (removing a leftover of that exact name).
  // `env` is read for the test hook only. Throws IoError naming the path.
  CheckpointWriter(std::filesystem::path run_dir, int64_t step,
                   const util::Environment& env = util::Environment::process());
  // Without commit(): removes the staging folder. Never throws.
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  const std::filesystem::path& staging_dir() const { return staging_; }
  int64_t step() const { return step_; }

  // Each adds one file under `name`: relative, '/'-separated (sub-folders are created), not
  // manifest.json, not added before (std::invalid_argument otherwise). Throw IoError naming the
  // file when writing fails.
  void add_bytes(const std::string& name, std::string_view bytes);
  void add_json(const std::string& name, const nlohmann::json& value);  // pretty-printed
  // The manifest also records every tensor's dtype and shape. Model weights should carry
  // metadata {"format": "pt"}, which Hugging Face loaders expect.
  void add_safetensors(const std::string& name, const model::TensorList& tensors,
                       const std::map<std::string, std::string>& metadata = {});
  // The Hugging Face sharded layout: "<stem>.safetensors" when all tensors fit in
  // `max_shard_bytes`, else shards "<stem>-00001-of-00003.safetensors", ... filled in the given
  // order (a tensor larger than the limit gets a shard of its own) and
  // "<stem>.safetensors.index.json" ({"metadata": {"total_size": bytes of all tensors},
  // "weight_map": {tensor: shard}}). Each shard gets `metadata`.
  void add_sharded_safetensors(const std::string& stem, const model::TensorList& tensors,
                               uint64_t max_shard_bytes,
                               const std::map<std::string, std::string>& metadata = {});

  // Moves in a file another process wrote, fsynced, into a folder on the same filesystem
  // (`from`), under record.path; `record` is what that process's FileWriter measured (size,
  // checksum, tensors), so nothing is read again. Throws IoError when `from` is missing, its size
  // differs from the record's, or the rename fails.
  void adopt_file(const std::filesystem::path& from, const ManifestFile& record);

  // Writes manifest.json and publishes the checkpoint (see the top of this file); returns
  // <run_dir>/checkpoint-<step>. Throws IoError; the staging folder is then removed by the
  // destructor and the previous checkpoints and `latest` are untouched (unless the failure came
  // after the rename, when the new checkpoint is complete but `latest` may be old).
  std::filesystem::path commit(const std::string& config_hash, const nlohmann::json& extra = {});

  // The files added so far, as the manifest will list them.
  const std::vector<ManifestFile>& files() const { return files_; }

 private:
  std::filesystem::path begin_file(const std::string& name);
  void end_file(util::FileWriter& out, const std::string& name,
                std::map<std::string, ManifestTensor> tensors = {});
  void crash_point();

  std::filesystem::path run_dir_;
  int64_t step_;
  std::filesystem::path staging_;
  std::vector<ManifestFile> files_;
  std::vector<std::filesystem::path> subdirs_;  // created inside staging_, fsynced at commit
  std::optional<int64_t> crash_after_;          // the test hook's n for this step
  int64_t slow_ms_ = 0;                         // HFTRAIN_TEST_SLOW_SAVE
  int64_t closed_files_ = 0;
  bool committed_ = false;
};

}  // namespace hftrain::ckpt
