// The optimizer state as checkpoints move it: every rank saves the pieces it holds, each placed in
// the flattened whole tensor it belongs to, and a resume under any strategy and world size reads
// back exactly the elements of its own pieces (ckpt/optimizer_shards.h has the files). No rank
// ever holds the whole state unless its strategy keeps the whole state anyway (single, ddp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include "optim/optimizer.h"

namespace hftrain::parallel {

// Elements [offset, offset + data.numel()) of the flattened state tensor `name`.
struct StatePiece {
  std::string name;            // "<parameter>/<state key>", as optim::OptimizerState names it
  std::vector<int64_t> shape;  // of the whole state tensor (the parameter's, for element-wise state)
  int64_t offset = 0;
  torch::Tensor data;  // 1-D under zero; the whole tensor, shaped, under single and ddp. The
                       // optimizer's live tensor (see optim::OptimizerState): write it before stepping
};

// What one rank contributes to a checkpoint's optimizer state.
struct LocalOptimizerState {
  std::vector<StatePiece> pieces;
  // This rank's optim::OptimizerState::meta. Under zero its "steps" name only the parameters it
  // holds a piece of; the writer merges them (the largest count per parameter).
  nlohmann::json meta;
  // Which of `num_files` shard files this rank writes; -1 for a replica of a rank that writes the
  // same bytes (ddp ranks other than 0, hybrid ranks outside node 0), which writes nothing.
  int file = -1;
  int num_files = 1;
};

// A saved optimizer state, read in ranges of its flattened tensors.
class SavedOptimizerState {
 public:
  virtual ~SavedOptimizerState() = default;
  // The optimizer meta (optim::OptimizerState::meta), "steps" over every parameter.
  virtual const nlohmann::json& meta() const = 0;
  // The file that describes the state (a checkpoint's optimizer/index.json), for messages about
  // what the state holds.
  virtual std::string source() const = 0;
  // Every saved tensor, "<parameter>/<state key>", sorted.
  virtual std::vector<std::string> names() const = 0;
  // The whole shape of `name` (one of names()).
  virtual std::vector<int64_t> shape(const std::string& name) const = 0;
  // Elements [offset, offset + count) of the flattened tensor `name`: a 1-D CPU tensor in its
  // stored dtype, possibly a read-only view of a mapped file (copy it, never write to it).
  // Throws util::CheckpointError naming the file for a range outside the tensor or a file that
  // is missing or does not hold what the checkpoint says.
  virtual torch::Tensor read(const std::string& name, int64_t offset, int64_t count) const = 0;
};

// A saved state seen through a filter: some of its tensors (names_, sorted) and its meta as the
// subclass changes it (a pipeline stage's parameters, a state key left out); reads go to `saved`,
// which must outlive it.
class FilteredOptimizerState : public SavedOptimizerState {
 public:
  const nlohmann::json& meta() const override { return meta_; }
  std::string source() const override { return saved_.source(); }
  std::vector<std::string> names() const override { return names_; }
  std::vector<int64_t> shape(const std::string& name) const override { return saved_.shape(name); }
  torch::Tensor read(const std::string& name, int64_t offset, int64_t count) const override {
    return saved_.read(name, offset, count);
  }

 protected:
  explicit FilteredOptimizerState(const SavedOptimizerState& saved) : saved_(saved), meta_(saved.meta()) {}
  const SavedOptimizerState& saved_;
  nlohmann::json meta_;
  std::vector<std::string> names_;
};

// The whole state (every tensor read entirely, in its saved shape), for the strategies that keep it
// whole.
optim::OptimizerState read_whole_state(const SavedOptimizerState& saved);

// Whether `saved` holds tensors of the state key `key` ("<parameter>/<key>").
bool has_state_key(const SavedOptimizerState& saved, const std::string& key);
// `saved` without the tensors of the state key `key` (a view: `saved` must outlive it).
std::unique_ptr<SavedOptimizerState> without_state_key(const SavedOptimizerState& saved, const std::string& key);

}  // namespace hftrain::parallel
