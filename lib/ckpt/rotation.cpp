#include "ckpt/rotation.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "ckpt/layout.h"
#include "util/file_writer.h"
#include "util/log.h"

namespace hftrain::ckpt {
namespace fs = std::filesystem;

std::vector<fs::path> rotate_checkpoints(const fs::path& run_dir, int64_t keep_last,
                                         std::optional<int64_t> protect_step) {
  std::vector<fs::path> deleted;
  if (keep_last <= 0) return deleted;
  const auto checkpoints = list_checkpoints(run_dir);  // ascending by step
  if (checkpoints.size() <= static_cast<size_t>(keep_last)) return deleted;
  const size_t first_kept =
      checkpoints.size() - static_cast<size_t>(keep_last);  // the newest always is
  for (size_t i = 0; i < first_kept; ++i) {
    const CheckpointEntry& c = checkpoints[i];
    if (protect_step && c.step == *protect_step) continue;
    const fs::path doomed = run_dir / (std::string(kDeletingPrefix) + std::to_string(c.step) + "-" +
                                       std::to_string(::getpid()));
    std::error_code ec;
    fs::remove_all(doomed, ec);
    if (::rename(c.dir.c_str(), doomed.c_str()) != 0)
      throw util::io_error("rename away", c.dir, errno);
    // The rename must be durable before the contents go, or a crash could leave a torn
    // checkpoint-<step>/ under its real name.
    util::fsync_dir(run_dir);
    fs::remove_all(doomed, ec);
    if (ec)
      util::log::warn("could not remove " + doomed.string() + " (" + ec.message() +
                      "); it is removed at the next start");
    deleted.push_back(c.dir);
  }
  return deleted;
}

}  // namespace hftrain::ckpt
