#include "parallel/data_parallel/shard_layout.h"

#include <algorithm>

#include <torch/torch.h>

#include "util/error.h"

namespace hftrain::parallel {

ShardLayout::ShardLayout(std::vector<Bucket> groups, int rank, std::vector<std::string> names,
                         std::vector<std::vector<int64_t>> shapes)
    : groups_(std::move(groups)), names_(std::move(names)), shapes_(std::move(shapes)) {
  pieces_ = shard_pieces(groups_, rank);
  piece_index_.assign(names_.size(), -1);
  for (size_t i = 0; i < pieces_.size(); ++i) piece_index_[pieces_[i].param] = static_cast<int64_t>(i);
  for (size_t i = 0; i < names_.size(); ++i) name_index_.emplace(names_[i], i);
}

const ShardPiece* ShardLayout::piece_of(size_t param) const {
  const int64_t k = piece_index_[param];
  return k < 0 ? nullptr : &pieces_[static_cast<size_t>(k)];
}

int64_t ShardLayout::numel(size_t param) const {
  int64_t n = 1;
  for (int64_t d : shapes_[param]) n *= d;
  return n;
}

size_t ShardLayout::index_of(const std::string& name) const {
  const auto it = name_index_.find(name);
  if (it == name_index_.end()) {
    throw util::CheckpointError("the optimizer state names `" + name + "`, which this model does not have",
                                "resume with the checkpoint's model");
  }
  return it->second;
}

std::vector<StatePiece> ShardLayout::pieces_of(const optim::OptimizerState& local) const {
  std::vector<StatePiece> out;
  for (const auto& [name, t] : local.tensors) {
    const size_t i = index_of(name.substr(0, name.rfind('/')));
    const ShardPiece* piece = piece_of(i);
    if (!piece || t.numel() == 0) continue;
    if (t.numel() != piece->numel) {
      // Only element-wise state follows the pieces (adafactor, which factors, is refused under zero).
      throw util::CheckpointError("the optimizer state `" + name + "` has " + std::to_string(t.numel()) +
                                      " elements, this rank's piece of the parameter " + std::to_string(piece->numel),
                                  "report this as a bug");
    }
    out.push_back({name, shapes_[i], piece->param_offset, t.reshape(-1)});
  }
  return out;
}

optim::OptimizerState ShardLayout::read(const SavedOptimizerState& saved) const {
  optim::OptimizerState shard;
  shard.meta = saved.meta();
  for (const auto& name : saved.names()) {
    const size_t i = index_of(name.substr(0, name.rfind('/')));
    int64_t n = 1;
    for (int64_t d : saved.shape(name)) n *= d;
    if (n != numel(i)) {
      throw util::CheckpointError("optimizer state `" + name + "` has " + std::to_string(n) +
                                      " elements, the parameter " + std::to_string(numel(i)),
                                  "resume with the checkpoint's model shape");
    }
    const ShardPiece* piece = piece_of(i);
    shard.tensors.emplace_back(name, piece ? saved.read(name, piece->param_offset, piece->numel)
                                           : saved.read(name, 0, 0));
  }
  return shard;
}

}  // namespace hftrain::parallel
