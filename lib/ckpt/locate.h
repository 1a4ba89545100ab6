// Which checkpoint a resume starts from: PATH is a checkpoint directory (it must verify) or a
// run directory (its newest checkpoint that verifies; newer ones that fail are skipped, and
// said so).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace hftrain::ckpt {

struct LocatedCheckpoint {
  std::filesystem::path dir;      // the checkpoint to resume from
  std::filesystem::path run_dir;  // the run directory it belongs to
  int64_t step = 0;
  std::vector<std::string> skipped;  // one line per newer checkpoint that failed verification
};

// Throws CheckpointError listing the problems when PATH is a checkpoint that fails verification,
// a run directory none of whose checkpoints verify, or neither.
LocatedCheckpoint locate_checkpoint(const std::filesystem::path& path);

}  // namespace hftrain::ckpt
