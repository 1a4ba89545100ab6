// Where this rank's shard lies in the flat groups (buckets, or zero3's units) that a ZeRO strategy
// cuts into one chunk per rank, and the optimizer state of those shards made whole and cut again.
// A checkpoint stores every parameter's state in the single-process layout (optim::
// OptimizerState), so that it resumes under any strategy and world size.
#pragma once

#include <string>
#include <vector>

#include <torch/types.h>

#include "dist/communicator.h"
#include "dist/grad_buckets.h"
#include "optim/optimizer.h"

namespace hftrain::dist {

class ShardLayout {
 public:
  // `groups`: padded to the size of the communicator that shards them; `rank` in it.
  ShardLayout(std::vector<Bucket> groups, int rank, std::vector<std::string> names,
              std::vector<std::vector<int64_t>> shapes);

  const std::vector<Bucket>& groups() const { return groups_; }
  const std::vector<ShardPiece>& pieces() const { return pieces_; }
  // This rank's piece of parameter i, or null when it holds none of it.
  const ShardPiece* piece_of(size_t param) const;
  const std::vector<std::string>& names() const { return names_; }
  int64_t numel(size_t param) const;
  // The parameter's index; CheckpointError for a name the model does not have.
  size_t index_of(const std::string& name) const;

  // Every rank's state made whole by all-gathers over `comm` (collective; every rank gets it).
  // `options`: where the communicator's buffers live (the device).
  optim::OptimizerState gather(Communicator& comm, const optim::OptimizerState& local,
                               const torch::TensorOptions& options) const;
  // This rank's slices of a whole state (views). CheckpointError for one that does not fit.
  optim::OptimizerState slice(const optim::OptimizerState& whole) const;

 private:
  std::vector<Bucket> groups_;
  std::vector<ShardPiece> pieces_;
  std::vector<int64_t> piece_index_;  // per parameter: index into pieces_, -1 for none
  std::vector<std::string> names_;
  std::vector<std::vector<int64_t>> shapes_;
};

}  // namespace hftrain::dist
