#include "train/state/checkpoint_fields.h"

#include "util/fs.h"
#include "util/json_depth.h"

namespace hftrain::train {
namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

constexpr const char* kDamaged = "the checkpoint is damaged; resume from another one (hftrain verify lists them)";

}  // namespace

Json read_json(const fs::path& path) {
  const std::string text = util::read_file<util::CheckpointError>(path, "checkpoint file");
  Json j = util::parse_json_or_throw<util::CheckpointError>(text, path.string(), path.string() + " is not valid JSON",
                                                           "the checkpoint is damaged; resume from another one");
  if (!j.is_object()) {
    throw util::CheckpointError(path.string() + " is not a JSON object",
                                "the checkpoint is damaged; resume from another one");
  }
  return j;
}

CheckpointFile::CheckpointFile(const fs::path& path)
    : name_(path.string()),
      json_(read_json(path)),
      fields_(json_, util::JsonPlace::top(name_, util::ErrorKind::kCheckpoint, kDamaged)) {}

int64_t count(const util::JsonFields& f, const char* key) { return f.integer(key, 0, kMaxCheckpointCount); }

}  // namespace hftrain::train
