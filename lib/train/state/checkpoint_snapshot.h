// What one checkpoint holds, gathered on the training thread so that writing it needs nothing else
// of the trainer: the tensors (the live ones for a save written at once, host copies for one written
// in the background, train/state/background_save.h) and every other file already serialised.
// Writing it is split around the optimizer's shard files, which a save written at once adopts
// between the two parts (the order of files a checkpoint has always had) and a background save
// adopts after both.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <c10/core/Event.h>
#include <nlohmann/json.hpp>
#include <torch/types.h>

#include "ckpt/writer.h"
#include "model/weights/safetensors.h"
#include "parallel/data_parallel/optimizer_pieces.h"

namespace hftrain::train {

struct CheckpointSnapshot {
  int64_t step = 0;
  // What the main rank writes: the weights ("model", sharded at shard_size bytes), the text files
  // beside them (tokenizer, config.json, chat templates), a LoRA run's peft files.
  model::TensorList weights;
  uint64_t shard_size = 0;
  std::vector<std::pair<std::string, std::string>> text_files;
  std::optional<nlohmann::json> peft_record;  // peft.json
  std::string adapter_config;                 // adapter_config.json
  model::TensorList adapter_tensors;          // adapter_model.safetensors
  // The state files, in the order they are written.
  std::vector<std::pair<std::string, nlohmann::json>> state_json_before_rng;  // scheduler, scaler
  model::TensorList rng;
  std::vector<std::pair<std::string, nlohmann::json>> state_json_after_rng;  // data, trainer state
  std::string config_yaml;
  nlohmann::json environment;
  std::optional<nlohmann::json> tensor_parallel;
  // Committing: the manifest's config hash, and the checkpoint rotation keeps (keep_last, the best).
  std::string config_hash;
  int64_t keep_last = 0;
  std::optional<int64_t> keep_step;
};

// The weights and the files beside them (first), then the state files (after the optimizer's).
void write_model_files(ckpt::CheckpointWriter& writer, const CheckpointSnapshot& snapshot);
void write_state_files(ckpt::CheckpointWriter& writer, const CheckpointSnapshot& snapshot);

// Publishing `writer` (every file written): the manifest, the rename into place, `latest`, then
// keep_last's rotation (ckpt/rotation.h). Touches files only (any thread). Throws IoError.
struct Committed {
  std::filesystem::path dir;
  std::vector<std::filesystem::path> removed;  // the checkpoints rotated away
};
Committed commit_snapshot(ckpt::CheckpointWriter& writer, const CheckpointSnapshot& snapshot,
                          const std::filesystem::path& run_dir);

// Host copies of tensors for a background save, in buffers kept from one save to the next (one save
// is in flight at a time): on CUDA in pinned memory, the copies queued on the current stream and
// an event recorded after them, which the writer waits for; on the CPU plain copies.
class HostCopies {
 public:
  // A new snapshot: the buffers are reused in the order they are asked for.
  void begin() { next_ = 0; }
  torch::Tensor copy(const torch::Tensor& t);
  model::TensorList copy(const model::TensorList& tensors);
  std::vector<parallel::StatePiece> copy(const std::vector<parallel::StatePiece>& pieces);
  // After the last copy of a snapshot (training thread): marks where the queued copies end.
  void end();
  // Blocks until the copies of the last snapshot are in host memory (any thread).
  void wait() const;
  // Bytes of the buffers.
  int64_t bytes() const;

 private:
  std::vector<torch::Tensor> pool_;
  size_t next_ = 0;
  std::optional<c10::Event> ready_;
};

}  // namespace hftrain::train
