// keep_last: deleting old checkpoints, by step number (checkpoint-10 is newer than checkpoint-9),
// never the newest one nor a protected one (the best by the eval metric).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

namespace hftrain::ckpt {

// Keeps the newest `keep_last` checkpoints of `run_dir` (0 or less keeps all), plus always the
// newest and `protect_step`'s, and deletes the others: each is first renamed to a
// .tmp-deleting-checkpoint-* name (so no half-deleted folder ever looks like a checkpoint), then
// removed. Returns the deleted checkpoint folders (their original paths), oldest first. Throws
// IoError when a rename fails; a removal that fails after the rename is logged and left to
// remove_stale_staging.
std::vector<std::filesystem::path> rotate_checkpoints(const std::filesystem::path& run_dir,
                                                      int64_t keep_last,
                                                      std::optional<int64_t> protect_step);

}  // namespace hftrain::ckpt
