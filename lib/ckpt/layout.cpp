#include "ckpt/layout.h"

#include <algorithm>

#include "util/error.h"
#include "util/log.h"
#include "util/strings.h"

namespace hftrain::ckpt {
namespace fs = std::filesystem;

namespace {

// The entries of `run_dir` (none when it does not exist). Throws IoError.
std::vector<fs::directory_entry> entries(const fs::path& run_dir) {
  std::vector<fs::directory_entry> out;
  std::error_code ec;
  if (!fs::exists(run_dir, ec)) return out;
  fs::directory_iterator it(run_dir, ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) out.push_back(*it);
  if (ec) {
    throw util::IoError("cannot list " + run_dir.string() + ": " + ec.message(),
                        "check its permissions");
  }
  return out;
}

}  // namespace

std::string checkpoint_dir_name(int64_t step) {
  return std::string(kCheckpointPrefix) + std::to_string(step);
}

std::string optimizer_shard_name(int file, int num_files) {
  // Every number as wide as the largest, so that the names sort in file order.
  const size_t width = std::max<size_t>(5, std::to_string(num_files).size());
  auto padded = [width](int n) {
    const std::string digits = std::to_string(n);
    return std::string(width - std::min(width, digits.size()), '0') + digits;
  };
  return "optimizer/shard-" + padded(file) + "-of-" + padded(num_files) + ".safetensors";
}

fs::path optimizer_staging_dir(const fs::path& run_dir, int64_t step, int64_t pid) {
  return run_dir / (std::string(kStagingPrefix) + std::to_string(step) + "-" + std::to_string(pid) +
                    "-optimizer");
}

std::optional<int64_t> parse_checkpoint_step(std::string_view dir_name) {
  if (!util::starts_with(dir_name, kCheckpointPrefix)) return std::nullopt;
  const std::string_view digits = dir_name.substr(kCheckpointPrefix.size());
  // 18 digits always fit int64; canonical form only, so two names never mean one step.
  if (digits.empty() || digits.size() > 18 || (digits.size() > 1 && digits[0] == '0'))
    return std::nullopt;
  int64_t step = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    step = step * 10 + (c - '0');
  }
  return step;
}

std::vector<CheckpointEntry> list_checkpoints(const fs::path& run_dir) {
  std::vector<CheckpointEntry> out;
  for (const auto& entry : entries(run_dir)) {
    std::error_code ec;
    const auto step = parse_checkpoint_step(entry.path().filename().string());
    if (step && entry.is_directory(ec)) out.push_back({*step, entry.path()});
  }
  std::sort(out.begin(), out.end(),
            [](const CheckpointEntry& a, const CheckpointEntry& b) { return a.step < b.step; });
  return out;
}

bool has_checkpoints(const fs::path& run_dir) {
  return !list_checkpoints(run_dir).empty();
}

std::vector<fs::path> remove_stale_staging(const fs::path& run_dir) {
  std::vector<fs::path> removed;
  for (const auto& entry : entries(run_dir)) {
    const std::string name = entry.path().filename().string();
    std::error_code ec;
    // `latest` is replaced through a temporary file next to it (util::atomic_write_file).
    const bool latest_tmp = util::starts_with(name, std::string(kLatestFile) + ".tmp-") && entry.is_regular_file(ec);
    if (!latest_tmp && (!(util::starts_with(name, kStagingPrefix) || util::starts_with(name, kDeletingPrefix)) ||
                        !entry.is_directory(ec))) {
      continue;
    }
    fs::remove_all(entry.path(), ec);
    if (ec) {
      throw util::IoError("cannot remove " + entry.path().string() + ": " + ec.message(),
                          "remove it by hand; it is an unfinished checkpoint save");
    }
    util::log::info("removed " + entry.path().string() +
                    ", left by an interrupted checkpoint save or rotation");
    removed.push_back(entry.path());
  }
  std::sort(removed.begin(), removed.end());
  return removed;
}

}  // namespace hftrain::ckpt
