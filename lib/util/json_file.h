// Reading the small JSON records hftrain keeps beside a run (status.json, mlflow.json, failure
// records) where a missing or damaged file is not an error but "no record".
#pragma once

#include <filesystem>
#include <optional>

#include <nlohmann/json.hpp>

namespace hftrain::util {

// The file's JSON object; nullopt when it is missing, unreadable, not JSON, nested deeper than
// json_depth allows, or not an object.
std::optional<nlohmann::json> read_json_object(const std::filesystem::path& path);

}  // namespace hftrain::util
