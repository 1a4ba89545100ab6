// The optimizer state's files in a checkpoint: each writing rank's shard file (a safetensors file
// of its pieces, named "<parameter>/<state key>"), rank 0's index of them (optimizer_index.h),
// and the reader that a resume loads its own pieces through, memory-mapped, so that it touches
// only the bytes of those pieces. optimizer_save.h has the protocol that writes them.
#pragma once

#include <filesystem>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "ckpt/optimizer_index.h"
#include "parallel/data_parallel/optimizer_pieces.h"

namespace hftrain::ckpt {

// Writes this rank's shard file (local.file of local.num_files) into the folder `dir`, under the
// file name of optimizer_shard_name(), and fsyncs it and `dir`. Returns what rank 0 needs to know
// about it: {"file": its ManifestFile (path relative to the checkpoint), "pieces": {name:
// {"shape", "offset", "count"}}, "steps": this rank's step counts}. Throws IoError.
nlohmann::json write_optimizer_shard(const std::filesystem::path& dir,
                                     const parallel::LocalOptimizerState& local);

// The index of the files that `records` describe (one per rank, null where a rank wrote none),
// with `meta` and the step counts merged over the records (the largest per parameter).
// Throws CheckpointError when the files or pieces do not fit together (a bug).
OptimizerIndex index_optimizer_shards(const std::vector<nlohmann::json>& records,
                                      nlohmann::json meta);

// The optimizer state of checkpoint `dir`: optimizer/index.json and its shard files, or the
// legacy optimizer.safetensors + optimizer.json. A shard file is mapped (and its header checked
// against the index) only when a read needs it. Throws CheckpointError naming the file: missing,
// truncated, a header that does not parse or does not match the index.
std::unique_ptr<parallel::SavedOptimizerState> open_saved_optimizer(const std::filesystem::path& dir);

}  // namespace hftrain::ckpt
