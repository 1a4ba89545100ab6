#include "train/state/checkpoint_fields.h"

#include <cmath>

#include "metrics/format.h"
#include "util/fs.h"
#include "util/json_depth.h"
#include "util/strings.h"

namespace hftrain::train {
namespace fs = std::filesystem;
using Json = nlohmann::json;

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

namespace {

[[noreturn]] void bad_value(const Json& j, const std::string& key, const fs::path& file, const std::string& want) {
  throw util::CheckpointError(
      file.string() + ": `" + key + "` is " + util::clip(j.at(key).dump(), 60) + ", not " + want,
      "the checkpoint is damaged; resume from another one (hftrain verify lists them)");
}

}  // namespace

int64_t count_field(const Json& j, const std::string& key, const fs::path& file) {
  if (!j.contains(key)) field<int64_t>(j, key, file);  // the missing-key message
  const Json& v = j.at(key);
  const std::string want = "a count (an integer from 0 to 2^53)";
  if (!v.is_number_integer()) bad_value(j, key, file, want);
  if (v.is_number_unsigned() ? v.get<uint64_t>() > static_cast<uint64_t>(kMaxCheckpointCount)
                             : (v.get<int64_t>() < 0 || v.get<int64_t>() > kMaxCheckpointCount)) {
    bad_value(j, key, file, want);
  }
  return v.get<int64_t>();
}

double real_field(const Json& j, const std::string& key, const fs::path& file, double lo, double hi) {
  const double x = field<double>(j, key, file);
  if (!std::isfinite(x) || x < lo || x > hi) {
    bad_value(j, key, file,
              "a finite number from " + metrics::format_number(lo, 6) + " to " + metrics::format_number(hi, 6));
  }
  return x;
}

std::optional<double> optional_field(const Json& j, const std::string& key, const fs::path& file) {
  if (!j.contains(key) || j.at(key).is_null()) return std::nullopt;
  return real_field(j, key, file, -1e30, 1e30);
}

}  // namespace hftrain::train
