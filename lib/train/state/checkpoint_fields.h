// The checkpoint's JSON state files (trainer_state.json, data.json, scheduler.json, ...) read back
// field by field, each value checked for type and range before a resume uses it: a damaged or
// hand-edited file is one CheckpointError naming the file, the key and the value, never a step of
// -1, a cursor wrapped around 2^64, or the JSON library's words.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "util/error.h"

namespace hftrain::train {

// The largest count a checkpoint may hold (steps, samples, tokens): far above any real run, far
// below where int64 arithmetic on it could overflow.
inline constexpr int64_t kMaxCheckpointCount = int64_t{1} << 53;

// A checkpoint's JSON file, which must hold an object (depth-limited, util/json_depth.h).
nlohmann::json read_json(const std::filesystem::path& path);

// `key` of `j` as T, or throws naming the file and key (missing, or of another type).
template <class T>
T field(const nlohmann::json& j, const std::string& key, const std::filesystem::path& file) {
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw util::CheckpointError(file.string() + ": `" + key + "` is missing or has the wrong type",
                                "the checkpoint is damaged or from another hftrain version");
  }
}

// A non-negative count written as a JSON integer, at most kMaxCheckpointCount.
int64_t count_field(const nlohmann::json& j, const std::string& key, const std::filesystem::path& file);
// A finite number in [lo, hi].
double real_field(const nlohmann::json& j, const std::string& key, const std::filesystem::path& file, double lo,
                  double hi);
// nullopt when absent or null, else a finite number of magnitude at most 1e30.
std::optional<double> optional_field(const nlohmann::json& j, const std::string& key,
                                     const std::filesystem::path& file);

}  // namespace hftrain::train
