#include "ckpt/manifest.h"

#include <cstdint>
#include <set>

#include "util/error.h"
#include "util/json_fields.h"
#include "util/strings.h"

namespace hftrain::ckpt {
namespace {

using Json = nlohmann::json;

constexpr const char* kDamaged = "the checkpoint is damaged or was not written by hftrain; use another checkpoint";

using Reader = util::JsonFields;

bool is_hex32(const std::string& s) {
  return s.size() == 32 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

ManifestTensor parse_tensor(const Reader& r) {
  ManifestTensor t;
  t.dtype = r.string("dtype");
  const Json& shape = r.array("shape");
  for (size_t i = 0; i < shape.size(); ++i) {
    t.shape.push_back(util::json_int(shape[i], r.at("shape")[i], 0, INT64_MAX));
  }
  return t;
}

ManifestFile parse_file(const Reader& r) {
  ManifestFile f;
  f.path = r.string("path");
  if (!is_safe_relative_path(f.path)) r.fail("path", "is not a relative path inside the checkpoint: " + f.path);
  f.size = static_cast<uint64_t>(r.integer("size", 0, INT64_MAX));
  f.checksum = r.string("checksum");
  if (!is_hex32(f.checksum)) r.fail("checksum", "is not 32 lowercase hex digits: " + f.checksum);
  if (r.has("tensors")) {
    const Reader tensors = r.object("tensors");
    for (const auto& [name, info] : tensors.json().items()) {
      f.tensors[name] = parse_tensor(Reader(info, tensors.at("'" + name + "'")));
    }
  }
  return f;
}

}  // namespace

bool is_safe_relative_path(const std::string& path) {
  if (path.empty() || path.front() == '/') return false;
  for (const auto& part : util::split(path, '/')) {
    if (part.empty() || part == "." || part == "..") return false;
  }
  return true;
}

Json ManifestFile::to_json() const {
  Json entry = {{"path", path}, {"size", size}, {"checksum", checksum}};
  if (!tensors.empty()) {
    Json tensors_json = Json::object();
    for (const auto& [name, t] : tensors) tensors_json[name] = {{"dtype", t.dtype}, {"shape", t.shape}};
    entry["tensors"] = std::move(tensors_json);
  }
  return entry;
}

ManifestFile ManifestFile::from_json(const Json& j, const std::string& where) {
  return parse_file(Reader(j, util::JsonPlace::top(where, util::ErrorKind::kCheckpoint, kDamaged)));
}

Json Manifest::to_json() const {
  Json files_json = Json::array();
  for (const auto& f : files) files_json.push_back(f.to_json());
  Json j = {{"format_version", format_version},
            {"step", step},
            {"config_hash", config_hash},
            {"checksum_algorithm", kChecksumAlgorithm},
            {"files", std::move(files_json)}};
  if (!extra.is_null()) j["extra"] = extra;
  return j;
}

Manifest Manifest::from_json(const Json& j, const std::filesystem::path& where) {
  const std::string file = where.string();
  const Reader r(j, util::JsonPlace::top(file, util::ErrorKind::kCheckpoint, kDamaged));
  Manifest m;
  const auto version = static_cast<uint64_t>(r.integer("format_version", 0, INT64_MAX));
  if (version > static_cast<uint64_t>(kManifestFormatVersion) || version == 0) {
    r.fail("format_version", "is " + std::to_string(version) + "; this hftrain reads version " +
                                 std::to_string(kManifestFormatVersion) + " (a newer hftrain wrote it?)");
  }
  m.format_version = static_cast<int>(version);
  m.step = r.integer("step", 0, INT64_MAX);
  m.config_hash = r.string("config_hash");
  const std::string algorithm = r.string("checksum_algorithm");
  if (algorithm != kChecksumAlgorithm) {
    r.fail("checksum_algorithm", "is \"" + algorithm + "\"; this hftrain knows \"" + kChecksumAlgorithm + "\"");
  }
  const Json& files = r.array("files");
  std::set<std::string> seen;
  for (size_t i = 0; i < files.size(); ++i) {
    const Reader entry(files[i], r.at("files")[i]);
    ManifestFile f = parse_file(entry);
    if (!seen.insert(f.path).second) entry.fail("path", "repeats " + f.path);
    m.files.push_back(std::move(f));
  }
  if (r.has("extra")) m.extra = r.require("extra");
  return m;
}

const ManifestFile* Manifest::find(const std::string& path) const {
  for (const auto& f : files) {
    if (f.path == path) return &f;
  }
  return nullptr;
}

}  // namespace hftrain::ckpt
