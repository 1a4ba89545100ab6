// optimizer/index.json: where the elements of every optimizer state tensor lie among the shard
// files the ranks wrote (ckpt/optimizer_shards.h). Rank 0 writes it from what the ranks report;
// resume reads it to open only the files that hold its pieces; verification checks it against the
// manifest. Torch-free.
//
//   {"format": 1,
//    "files": ["optimizer/shard-00000-of-00002.safetensors",
//              "optimizer/shard-00001-of-00002.safetensors"],
//    "tensors": {"h.0.mlp.c_fc.weight/exp_avg": {"shape": [128, 32],
//                                                "pieces": [[0, 0, 2048], [1, 2048, 2048]]},
//                ...},
//    "optimizer": {"optimizer": "adamw", "groups": [...], "steps": {...}, ...}}
//
// files     paths relative to the checkpoint folder
// tensors   "<parameter>/<state key>" -> the whole tensor's shape and its pieces [file, offset,
//           count]: elements [offset, offset + count) of the flattened tensor are the tensor of
//           the same name in files[file] (count elements in any shape: 1-D pieces under zero,
//           the whole tensor shaped under single and ddp). Pieces are sorted by offset and tile
//           the tensor exactly; a file holds at most one piece of a tensor, and nothing else.
// optimizer the optimizer's meta (optim::OptimizerState), step counts merged over the ranks
//
// A checkpoint from before per-rank shards (optimizer.safetensors + optimizer.json) reads as an
// index of one file that holds every tensor whole (legacy_optimizer_index).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace hftrain::ckpt {

inline constexpr int kOptimizerIndexFormat = 1;

struct OptimizerPiece {
  size_t file = 0;  // into OptimizerIndex::files
  int64_t offset = 0;
  int64_t count = 0;
};

struct OptimizerTensor {
  std::vector<int64_t> shape;
  std::vector<OptimizerPiece> pieces;  // by offset
  int64_t numel() const;
};

struct OptimizerIndex {
  std::vector<std::string> files;
  std::map<std::string, OptimizerTensor> tensors;
  nlohmann::json optimizer;

  nlohmann::json to_json() const;
  // Parses and checks (see check()). Throws CheckpointError naming `where` and the field.
  static OptimizerIndex from_json(const nlohmann::json& j, const std::string& where);
  // Sorts each tensor's pieces by offset, then checks: files safe relative paths, none twice;
  // pieces in range, tiling their tensor exactly, at most one per file. Throws CheckpointError
  // naming `where` and the tensor.
  void check(const std::string& where);

  // What differs between the pieces the index puts in files[file] and the tensors that file holds
  // (name -> element count): one line each, naming the file; empty when they agree.
  std::vector<std::string> mismatches(size_t file,
                                      const std::map<std::string, int64_t>& numels) const;
};

// The index of a legacy checkpoint: every tensor of `file` (name -> shape) whole.
OptimizerIndex legacy_optimizer_index(const std::string& file,
                                      const std::map<std::string, std::vector<int64_t>>& shapes,
                                      nlohmann::json optimizer);

}  // namespace hftrain::ckpt
