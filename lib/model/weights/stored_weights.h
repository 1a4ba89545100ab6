// A model directory's weights as a set of named tensors read on demand: model.safetensors, or the
// Hugging Face sharded layout (model.safetensors.index.json naming model-0000i-of-0000N.safetensors
// shards), memory-mapped. Loading copies each tensor from the mapping straight into its parameter
// (converting its dtype there), so no second copy of the weights is ever held in memory.
// Also the writer of the same layout, for `hftrain export --hf`.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/weights/safetensors.h"

namespace hftrain::model {

// Named tensors to load a model from.
class TensorSource {
 public:
  virtual ~TensorSource() = default;
  // Every tensor name, sorted.
  virtual std::vector<std::string> names() const = 0;
  // The tensor `name` (one of names()) on the CPU, in its stored dtype; for a mapped file a
  // read-only view of the mapping. Throws CheckpointError for data that is not valid.
  virtual torch::Tensor get(const std::string& name) const = 0;
  // The file (or index) the tensors come from, for messages.
  virtual std::string where() const = 0;
};

// Tensors already in memory (tests; a TensorList read some other way).
class TensorListSource : public TensorSource {
 public:
  TensorListSource(const TensorList& tensors, std::string where);
  std::vector<std::string> names() const override;
  torch::Tensor get(const std::string& name) const override;
  std::string where() const override { return where_; }

 private:
  std::map<std::string, torch::Tensor> tensors_;
  std::string where_;
};

// The memory-mapped weight files of a directory.
class StoredWeights : public TensorSource {
 public:
  // model.safetensors, or when it is absent model.safetensors.index.json and every shard it
  // lists. Checks the shards against the index without reading tensor data: every listed shard
  // exists, every tensor sits in exactly the shard the index names, none is in two shards or in
  // none. Throws CheckpointError naming the file and listing what differs.
  explicit StoredWeights(const std::filesystem::path& dir);
  ~StoredWeights() override;

  std::vector<std::string> names() const override;
  torch::Tensor get(const std::string& name) const override;
  std::string where() const override { return where_.string(); }
  // The dtype and shape of `name` without touching its data.
  const SafetensorsEntry& entry(const std::string& name) const;

 private:
  std::filesystem::path where_;
  std::vector<std::unique_ptr<MappedSafetensors>> files_;
  std::map<std::string, std::pair<const MappedSafetensors*, const SafetensorsEntry*>> tensors_;
};

// True when `dir` holds model.safetensors or model.safetensors.index.json.
bool has_model_weights(const std::filesystem::path& dir);

// How `tensors` are cut into Hugging Face shards: in the given order, a new shard when the next
// tensor would pass `max_shard_bytes` (a larger tensor gets a shard of its own). The one layout
// that model directories, exports and checkpoints share.
struct WeightShards {
  std::vector<TensorList> shards;  // one when everything fits
  std::vector<std::string> files;  // "<stem>.safetensors", or "<stem>-0000i-of-0000N.safetensors"
  uint64_t total_bytes = 0;
  // The "<stem>.safetensors.index.json" text (total size and a weight map), for several shards.
  std::string index_json() const;
};
WeightShards plan_weight_shards(const TensorList& tensors, uint64_t max_shard_bytes, const std::string& stem = "model");

// Writes `tensors` into the existing folder `dir` in the Hugging Face layout: model.safetensors
// when they fit in `max_shard_bytes`, else model-00001-of-0000N.safetensors shards filled in the
// given order (a tensor larger than the limit gets a shard of its own) plus
// model.safetensors.index.json. One tensor at a time is made contiguous on the CPU (peak extra
// memory: the largest tensor). Each file is written crash-safely. Throws IoError naming the file.
void write_sharded_weights(const std::filesystem::path& dir, const TensorList& tensors, uint64_t max_shard_bytes,
                           const std::map<std::string, std::string>& metadata = {{"format", "pt"}});

// Names for messages: at most `shown` of them, then "and N more"; with `fold_layers`, names that
// differ only in a layer number are folded into one ("model.layers.*.mlp.up_proj.bias (in 28 layers)").
std::string describe_names(const std::vector<std::string>& names, size_t shown = 8, bool fold_layers = true);

}  // namespace hftrain::model
