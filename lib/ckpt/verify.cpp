#include "ckpt/verify.h"

#include <algorithm>
#include <map>
#include <set>

#include "ckpt/optimizer_index.h"
#include "model/weights/safetensors_header.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/strings.h"
#include "util/json_depth.h"

namespace hftrain::ckpt {
namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

constexpr size_t kShown = 5;

std::string list_some(const std::vector<std::string>& items) {
  std::vector<std::string> shown(items.begin(),
                                 items.begin() + static_cast<long>(std::min(items.size(), kShown)));
  std::string s = util::join(shown, ", ");
  if (items.size() > kShown) s += " and " + std::to_string(items.size() - kShown) + " more";
  return s;
}

std::string describe(const ManifestTensor& t) {
  std::vector<std::string> dims;
  for (int64_t d : t.shape) dims.push_back(std::to_string(d));
  return t.dtype + " [" + util::join(dims, ", ") + "]";
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The tensors of a safetensors file against the manifest's record of them.
void check_tensors(const fs::path& file, const ManifestFile& entry,
                   std::vector<std::string>& problems) {
  model::SafetensorsHeader header;
  try {
    header = model::read_safetensors_header(file);
  } catch (const util::Error& e) {
    problems.push_back(entry.path + ": the safetensors header is unreadable: " + e.what());
    return;
  }
  std::map<std::string, ManifestTensor> actual;
  for (const auto& t : header.tensors) actual[t.name] = {t.dtype, t.shape};
  std::vector<std::string> missing, unexpected, changed;
  for (const auto& [name, want] : entry.tensors) {
    auto it = actual.find(name);
    if (it == actual.end()) {
      missing.push_back(name);
    } else if (!(it->second == want)) {
      changed.push_back(name + " (" + describe(it->second) + ", the manifest says " +
                        describe(want) + ")");
    }
  }
  for (const auto& [name, t] : actual) {
    if (!entry.tensors.count(name)) unexpected.push_back(name);
  }
  if (missing.empty() && unexpected.empty() && changed.empty()) return;
  std::string message = entry.path + ": its tensors differ from the manifest:";
  if (!missing.empty()) message += " missing " + list_some(missing) + ";";
  if (!unexpected.empty()) message += " not in the manifest " + list_some(unexpected) + ";";
  if (!changed.empty()) message += " changed " + list_some(changed) + ";";
  message.pop_back();
  problems.push_back(message);
}

void check_file(const fs::path& dir, const ManifestFile& entry,
                std::vector<std::string>& problems) {
  const fs::path file = dir / entry.path;
  std::error_code ec;
  const auto status = fs::status(file, ec);
  if (!fs::exists(status)) {
    problems.push_back(entry.path + ": listed in the manifest but missing");
    return;
  }
  if (!fs::is_regular_file(status)) {
    problems.push_back(entry.path + ": not a regular file");
    return;
  }
  const uint64_t size = fs::file_size(file, ec);
  if (ec || size != entry.size) {
    problems.push_back(entry.path + ": " + std::to_string(size) + " bytes, the manifest says " +
                       std::to_string(entry.size) + " (truncated or rewritten)");
    return;
  }
  try {
    if (util::hash_file_hex(file) != entry.checksum) {
      problems.push_back(
          entry.path +
          ": its checksum differs from the manifest's (the contents changed after the save)");
    }
  } catch (const util::Error& e) {
    problems.push_back(entry.path + ": " + e.what());
    return;
  }
  if (ends_with(entry.path, ".safetensors")) check_tensors(file, entry, problems);
}

// optimizer/index.json against the manifest: every shard file it names listed there, holding
// exactly the pieces it places in it (by the manifest's shapes, which check_tensors() compared
// with the files' headers).
void check_optimizer_index(const fs::path& dir, const Manifest& manifest,
                           std::vector<std::string>& problems) {
  if (!manifest.find(kOptimizerIndexFile)) return;
  OptimizerIndex index;
  try {
    const std::string text = util::read_file<util::CheckpointError>(dir / kOptimizerIndexFile, "optimizer index");
    const Json j = util::parse_json<util::CheckpointError>(text, (dir / kOptimizerIndexFile).string());
    index = OptimizerIndex::from_json(j, kOptimizerIndexFile);
  } catch (const util::Error& e) {
    problems.push_back(e.what());
    return;
  }
  for (size_t i = 0; i < index.files.size(); ++i) {
    const ManifestFile* file = manifest.find(index.files[i]);
    if (!file) {
      problems.push_back(std::string(kOptimizerIndexFile) + ": names " + index.files[i] +
                         ", which the manifest does not list");
      continue;
    }
    std::map<std::string, int64_t> numels;
    for (const auto& [name, t] : file->tensors) {
      int64_t n = 1;
      for (int64_t d : t.shape) n *= d;
      numels[name] = n;
    }
    for (auto& p : index.mismatches(i, numels)) problems.push_back(std::move(p));
  }
}

// Files under `dir` the manifest does not list (the manifest itself aside).
std::vector<std::string> unlisted_files(const fs::path& dir, const Manifest& manifest) {
  std::set<std::string> listed{kManifestFile};
  for (const auto& f : manifest.files) listed.insert(f.path);
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_directory(ec)) continue;
    const std::string rel = it->path().lexically_relative(dir).generic_string();
    if (!listed.count(rel)) out.push_back(rel + ": not listed in the manifest (ignored)");
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

VerifyReport verify_checkpoint(const fs::path& dir) {
  VerifyReport report;
  report.dir = dir;
  std::error_code ec;
  const auto status = fs::status(dir, ec);
  if (!fs::exists(status)) {
    report.problems.push_back(dir.string() + " does not exist");
    return report;
  }
  if (!fs::is_directory(status)) {
    report.problems.push_back(dir.string() + " is not a directory");
    return report;
  }
  const fs::path manifest_path = dir / kManifestFile;
  if (!fs::exists(manifest_path, ec)) {
    report.problems.push_back(std::string(kManifestFile) + " is missing: the save did not finish");
    return report;
  }
  try {
    const std::string text = util::read_file<util::CheckpointError>(manifest_path, "manifest");
    const Json j = util::parse_json<util::CheckpointError>(text, manifest_path.string());
    if (j.is_discarded())
      throw util::CheckpointError(manifest_path.string() + " is not valid JSON");
    report.manifest = Manifest::from_json(j, manifest_path);
  } catch (const util::Error& e) {
    report.problems.push_back(std::string(kManifestFile) + ": " + e.what());
    return report;
  }
  const Manifest& m = *report.manifest;
  fs::path name = dir.filename().empty() ? dir.parent_path().filename() : dir.filename();
  if (auto step = parse_checkpoint_step(name.string()); step && *step != m.step) {
    report.problems.push_back(std::string(kManifestFile) + ": step " + std::to_string(m.step) +
                              ", but the folder is " + name.string());
  }
  for (const auto& f : m.files) check_file(dir, f, report.problems);
  if (report.problems.empty()) check_optimizer_index(dir, m, report.problems);
  report.notes = unlisted_files(dir, m);
  return report;
}

std::optional<ResumeChoice> newest_verified(const fs::path& run_dir, std::vector<SkippedCheckpoint>* failed,
                                            std::optional<int64_t> before) {
  const auto checkpoints = list_checkpoints(run_dir);
  std::vector<SkippedCheckpoint> skipped;
  for (auto it = checkpoints.rbegin(); it != checkpoints.rend(); ++it) {
    if (before && it->step >= *before) continue;
    VerifyReport report = verify_checkpoint(it->dir);
    if (report.ok()) return ResumeChoice{*it, std::move(skipped)};
    skipped.push_back({*it, std::move(report.problems)});
  }
  if (failed) *failed = std::move(skipped);
  return std::nullopt;
}

}  // namespace hftrain::ckpt
