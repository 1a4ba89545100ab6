// preference.reference=precomputed (TRL's precompute_ref_log_probs): DPO's reference log-probs of
// every pair, computed once before training by the starting model itself, so that no second model is
// in memory while training. The values ride with the pairs into each batch (data::Batch's
// reference_logps), and are cached beside the token cache under a key of everything they depend on
// (the pairs' ids, the starting weights, the batching and precision), so that a resume, or the next
// run of the same recipe, reads them instead of recomputing; a resume without the cache recomputes the
// same values from the same starting weights.
#pragma once

#include <filesystem>
#include <string>

#include "data/loader.h"
#include "parallel/comm/communicator.h"
#include "train/task/task_model.h"

namespace hftrain::train {

struct ReferencePassOptions {
  int64_t batch_pairs = 1;      // pairs per forward (trainer.micro_batch_size)
  int32_t pad_id = 0;           // the rows' padding
  int64_t pad_to_multiple = 1;  // data.pad_to_multiple_of
  std::filesystem::path cache_file;  // where the values are kept; empty: not cached
};

// The cache file for `pairs` in `cache_dir` (data.cache_dir's folder): named by a hash of the pairs'
// ids and `weights_key` (what identifies the starting weights and how they compute: model.from's
// files, or the seed and shape of a fresh model; the precision, the device, the batching).
std::filesystem::path reference_cache_file(const std::filesystem::path& cache_dir, const data::PreferencePairs& pairs,
                                           const std::string& weights_key);

// Fills every pair's reference_logps: read from options.cache_file where it holds them, else
// computed by `model` (no graph, evaluation mode) over the pairs of both splits, each data-parallel
// rank scoring its share of the batches and the ranks' values summed over `data_parallel`, then
// written to options.cache_file by the main rank (crash-safely; a failed write is logged, not fatal).
// Returns true when the values came from the cache.
bool precompute_reference_logps(TaskModel& model, data::PreferencePairs& pairs, const ReferencePassOptions& options,
                                const torch::Device& device, parallel::Communicator& data_parallel, bool is_main);

}  // namespace hftrain::train
