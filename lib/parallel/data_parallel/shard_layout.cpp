#include "parallel/data_parallel/shard_layout.h"

#include <algorithm>

#include <torch/torch.h>

#include "util/error.h"

namespace hftrain::parallel {

ShardLayout::ShardLayout(std::vector<Bucket> groups, int rank, std::vector<std::string> names,
                         std::vector<std::vector<int64_t>> shapes, optim::StateBlocks blocks)
    : groups_(std::move(groups)), names_(std::move(names)), shapes_(std::move(shapes)), blocks_(std::move(blocks)) {
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

ShardLayout::Range ShardLayout::range_of(const std::string& key, const ShardPiece& piece, int64_t numel) const {
  if (!blocks_.is_block_key(key)) return {piece.param_offset, piece.numel, numel};
  // One element per block; the piece starts on a block boundary (the groups are aligned to it).
  const int64_t b = blocks_.block;
  return {piece.param_offset / b, (piece.numel + b - 1) / b, (numel + b - 1) / b};
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
    const size_t slash = name.rfind('/');
    const size_t i = index_of(name.substr(0, slash));
    const ShardPiece* piece = piece_of(i);
    if (!piece || t.numel() == 0) continue;
    const std::string key = name.substr(slash + 1);
    const Range r = range_of(key, *piece, numel(i));
    if (t.numel() != r.count) {
      // Only element-wise and block-wise state follows the pieces (adafactor, which factors, is
      // refused under zero).
      throw util::CheckpointError("the optimizer state `" + name + "` has " + std::to_string(t.numel()) +
                                      " elements, this rank's piece of the parameter " + std::to_string(r.count),
                                  "report this as a bug");
    }
    const std::vector<int64_t> shape = blocks_.is_block_key(key) ? std::vector<int64_t>{r.whole} : shapes_[i];
    out.push_back({name, shape, r.offset, t.reshape(-1)});
  }
  return out;
}

optim::OptimizerState ShardLayout::read(const SavedOptimizerState& saved) const {
  optim::OptimizerState shard;
  shard.meta = saved.meta();
  for (const auto& name : saved.names()) {
    const size_t slash = name.rfind('/');
    const size_t i = index_of(name.substr(0, slash));
    int64_t n = 1;
    for (int64_t d : saved.shape(name)) n *= d;
    const ShardPiece* piece = piece_of(i);
    const std::string key = name.substr(slash + 1);
    const Range r = range_of(key, piece ? *piece : ShardPiece{}, numel(i));
    if (n != r.whole) {
      throw util::CheckpointError("optimizer state `" + name + "` has " + std::to_string(n) + " elements, " +
                                      (blocks_.is_block_key(key) ? "the parameter's blocks " : "the parameter ") +
                                      std::to_string(r.whole),
                                  "resume with the checkpoint's model shape");
    }
    shard.tensors.emplace_back(name, piece ? saved.read(name, r.offset, r.count) : saved.read(name, 0, 0));
  }
  return shard;
}

}  // namespace hftrain::parallel
