#include "ckpt/locate.h"

#include "ckpt/layout.h"
#include "ckpt/verify.h"
#include "util/error.h"

namespace hftrain::ckpt {
namespace fs = std::filesystem;

namespace {

std::string problem_lines(const std::vector<std::string>& problems) {
  std::string out;
  for (const auto& p : problems) out += "\n  - " + p;
  return out;
}

}  // namespace

LocatedCheckpoint locate_checkpoint(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) {
    throw util::CheckpointError(path.string() + " is not a directory",
                                "name a checkpoint (runs/NAME/checkpoint-N) or a run directory (runs/NAME)");
  }
  fs::path clean = path.lexically_normal();
  if (!clean.has_filename() && clean.has_parent_path()) clean = clean.parent_path();  // "runs/a/" -> "runs/a"
  const std::string name = clean.filename().string();
  if (fs::exists(clean / kManifestFile, ec) || parse_checkpoint_step(name)) {
    const VerifyReport report = verify_checkpoint(clean);
    if (!report.ok()) {
      throw util::CheckpointError("checkpoint " + clean.string() + " does not verify:" + problem_lines(report.problems),
                                  "resume from the run directory instead (" + clean.parent_path().string() +
                                      "): it falls back to the newest checkpoint that verifies");
    }
    return {clean, clean.parent_path(), report.manifest->step, {}};
  }
  const auto entries = list_checkpoints(clean);
  if (entries.empty()) {
    throw util::CheckpointError(clean.string() + " holds no checkpoint-N directories",
                                "name a run directory with checkpoints, or a checkpoint directory");
  }
  const auto choice = newest_verified(clean);
  if (!choice) {
    std::string msg = "no checkpoint in " + clean.string() + " verifies:";
    for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
      msg += "\n  " + it->dir.filename().string() + ":" + problem_lines(verify_checkpoint(it->dir).problems);
    }
    throw util::CheckpointError(msg, "the run has to start over (hftrain run ... --overwrite)");
  }
  LocatedCheckpoint out{choice->chosen.dir, clean, choice->chosen.step, {}};
  for (const auto& s : choice->skipped) {
    out.skipped.push_back("skipped " + s.entry.dir.string() + ", which does not verify:" + problem_lines(s.problems));
  }
  return out;
}

}  // namespace hftrain::ckpt
