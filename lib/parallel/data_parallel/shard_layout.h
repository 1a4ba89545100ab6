// Where this rank's shard lies in the flat groups (buckets, or zero3's units) that a ZeRO strategy
// cuts into one chunk per rank, and its optimizer state as pieces of the whole tensors: what each
// rank saves, and what it reads back from any saved state (parallel/data_parallel/optimizer_pieces.h), so that a
// checkpoint resumes under any strategy and world size.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include <torch/types.h>

#include "parallel/data_parallel/grad_buckets.h"
#include "parallel/data_parallel/optimizer_pieces.h"
#include "optim/optimizer.h"

namespace hftrain::parallel {

class ShardLayout {
 public:
  // `groups`: padded to the size of the communicator that shards them; `rank` in it. `blocks`:
  // the optimizer's state that holds one element per block of the parameter (the groups aligned
  // to its block); every other state tensor is element-wise.
  ShardLayout(std::vector<Bucket> groups, int rank, std::vector<std::string> names,
              std::vector<std::vector<int64_t>> shapes, optim::StateBlocks blocks = {});

  const std::vector<Bucket>& groups() const { return groups_; }
  const std::vector<ShardPiece>& pieces() const { return pieces_; }
  // This rank's piece of parameter i, or null when it holds none of it.
  const ShardPiece* piece_of(size_t param) const;
  const std::vector<std::string>& names() const { return names_; }
  int64_t numel(size_t param) const;
  // The parameter's index; CheckpointError for a name the model does not have.
  size_t index_of(const std::string& name) const;

  // `local` (the state of an optimizer over this rank's pieces) placed in the whole tensors; the
  // parameters this rank holds no piece of have none. Not collective.
  std::vector<StatePiece> pieces_of(const optim::OptimizerState& local) const;
  // This rank's state out of a saved one: for every saved tensor the elements of this rank's piece
  // (none where it holds no piece of the parameter), each read alone. CheckpointError for a state
  // that does not fit the model.
  optim::OptimizerState read(const SavedOptimizerState& saved) const;

 private:
  std::vector<Bucket> groups_;
  std::vector<ShardPiece> pieces_;
  std::vector<int64_t> piece_index_;  // per parameter: index into pieces_, -1 for none
  std::vector<std::string> names_;
  std::unordered_map<std::string, size_t> name_index_;  // names_ inverted: one lookup per saved tensor
  std::vector<std::vector<int64_t>> shapes_;
  optim::StateBlocks blocks_;

  // Where the state tensor `key` of this rank's `piece` lies in the flattened whole state tensor,
  // and that tensor's element count, for a parameter of `numel` elements.
  struct Range {
    int64_t offset = 0, count = 0, whole = 0;
  };
  Range range_of(const std::string& key, const ShardPiece& piece, int64_t numel) const;
};

}  // namespace hftrain::parallel
