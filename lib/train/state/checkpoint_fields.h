// The checkpoint's JSON state files (trainer_state.json, data.json, scheduler.json, ...) read back
// field by field with util's typed reader (util/json_fields.h), each value checked for type and range
// before a resume uses it: a damaged or hand-edited file is one CheckpointError naming the file, the
// key and the value, never a step of -1, a cursor wrapped around 2^64, or the JSON library's words.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "util/json_fields.h"

namespace hftrain::train {

// The largest count a checkpoint may hold (steps, samples, tokens): far above any real run, far
// below where int64 arithmetic on it could overflow.
inline constexpr int64_t kMaxCheckpointCount = int64_t{1} << 53;
// The largest magnitude a saved loss or other real number may have.
inline constexpr double kMaxCheckpointReal = 1e30;

// A checkpoint's JSON file, which must hold an object (depth-limited, util/json_depth.h).
nlohmann::json read_json(const std::filesystem::path& path);

// One checkpoint file read and parsed, and its top-level object's fields.
class CheckpointFile {
 public:
  explicit CheckpointFile(const std::filesystem::path& path);
  CheckpointFile(const CheckpointFile&) = delete;
  CheckpointFile& operator=(const CheckpointFile&) = delete;

  const util::JsonFields& fields() const { return fields_; }

 private:
  std::string name_;
  nlohmann::json json_;
  util::JsonFields fields_;
};

// A non-negative count written as a JSON integer, at most kMaxCheckpointCount.
int64_t count(const util::JsonFields& f, const char* key);

}  // namespace hftrain::train
