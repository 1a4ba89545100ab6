#include "util/json_file.h"

#include <fstream>
#include <sstream>

#include "util/error.h"
#include "util/json_depth.h"

namespace hftrain::util {

std::optional<nlohmann::json> read_json_object(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  try {
    nlohmann::json j = parse_json<CheckpointError>(text.str(), path.string());
    if (!j.is_object()) return std::nullopt;
    return j;
  } catch (const Error&) {  // nested too deep
    return std::nullopt;
  }
}

}  // namespace hftrain::util
