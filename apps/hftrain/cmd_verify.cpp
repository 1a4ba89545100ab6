// `hftrain verify PATH`: checks a checkpoint (or every checkpoint of a run directory) against its
// manifest: every file present with its size and checksum, every tensor's name, dtype and shape;
// then, when those hold, every field of the trainer's state files as a resume reads them (steps,
// cursor, counters, scaler, generator states: train/state/checkpoint_state.h). Exit 0 when all verify,
// 2 otherwise.
#include <filesystem>
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>

#include "ckpt/layout.h"
#include "ckpt/verify.h"
#include "commands.h"
#include "train/state/checkpoint_state.h"
#include "util/error.h"

namespace hftrain::app {
namespace {

namespace fs = std::filesystem;

struct VerifyArgs {
  std::string path;
};

// Prints one checkpoint's verdict; returns whether it verified.
bool report(const fs::path& dir) {
  ckpt::VerifyReport r = ckpt::verify_checkpoint(dir);
  // The fields only once the files are the ones the manifest recorded (else those problems say it).
  if (r.ok()) r.problems = train::check_state_files(dir);
  if (r.ok()) {
    uint64_t bytes = 0;
    for (const auto& f : r.manifest->files) bytes += f.size;
    std::cout << dir.string() << ": OK (step " << r.manifest->step << ", " << r.manifest->files.size() << " files, "
              << bytes << " bytes)\n";
  } else {
    std::cout << dir.string() << ": " << r.problems.size() << (r.problems.size() == 1 ? " problem" : " problems")
              << "\n";
    for (const auto& p : r.problems) std::cout << "  - " << p << "\n";
  }
  for (const auto& n : r.notes) std::cout << "  note: " << n << "\n";
  return r.ok();
}

int verify(const VerifyArgs& a) {
  fs::path path = fs::path(a.path).lexically_normal();
  if (!path.has_filename() && path.has_parent_path()) path = path.parent_path();
  std::error_code ec;
  if (!fs::is_directory(path, ec)) {
    throw util::UsageError(a.path + " is not a directory",
                           "name a checkpoint (runs/NAME/checkpoint-N) or a run directory");
  }
  if (fs::exists(path / ckpt::kManifestFile, ec) || ckpt::parse_checkpoint_step(path.filename().string())) {
    return report(path) ? util::kExitOk : util::kExitBadInput;
  }
  const auto entries = ckpt::list_checkpoints(path);
  if (entries.empty()) {
    throw util::UsageError(path.string() + " holds no checkpoint-N directories",
                           "name a checkpoint or a run directory");
  }
  size_t bad = 0;
  for (const auto& e : entries) bad += report(e.dir) ? 0 : 1;
  if (bad > 0) {
    std::cout << bad << " of " << entries.size() << " checkpoints do not verify\n";
    return util::kExitBadInput;
  }
  return util::kExitOk;
}

}  // namespace

void add_verify_command(CLI::App& app, Runner& runner) {
  auto a = std::make_shared<VerifyArgs>();
  CLI::App* sub =
      app.add_subcommand("verify", "Check checkpoints against their manifests (files, sizes, checksums, tensors)");
  sub->add_option("path", a->path, "A checkpoint or a run directory (then every checkpoint in it)")->required();
  sub->callback([a, &runner] { runner = [a] { return verify(*a); }; });
}

}  // namespace hftrain::app
