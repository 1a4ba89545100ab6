#include "ckpt/manifest.h"

#include <cstdint>
#include <set>

#include "util/error.h"
#include "util/strings.h"

namespace hftrain::ckpt {
namespace {

using Json = nlohmann::json;

// Parsed text gives unsigned numbers; a manifest built in memory (to_json) gives signed ones.
bool is_non_negative_integer(const Json& v) {
  return v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0);
}

// Reads the fields of one JSON object, naming `context` ("files[2]") in errors.
class Reader {
 public:
  Reader(const Json& j, std::string where, std::string context)
      : j_(j), where_(std::move(where)), context_(std::move(context)) {
    if (!j_.is_object()) fail("", "is not a JSON object");
  }

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    std::string field = context_;
    if (!key.empty()) field += (field.empty() ? "" : ".") + key;
    throw util::CheckpointError(
        where_ + ": " + (field.empty() ? "the manifest" : field) + " " + what,
        "the checkpoint is damaged or was not written by hftrain; use another checkpoint");
  }
  const Json& at(const std::string& key) const {
    if (!j_.contains(key)) fail(key, "is missing");
    return j_.at(key);
  }
  bool has(const std::string& key) const { return j_.contains(key); }
  std::string string(const std::string& key) const {
    const Json& v = at(key);
    if (!v.is_string()) fail(key, "is not a string: " + v.dump());
    return v.get<std::string>();
  }
  uint64_t unsigned_int(const std::string& key) const {
    const Json& v = at(key);
    if (!is_non_negative_integer(v)) fail(key, "is not a non-negative integer: " + v.dump());
    return v.get<uint64_t>();
  }
  const std::string& where() const { return where_; }
  const std::string& context() const { return context_; }

 private:
  const Json& j_;
  std::string where_;
  std::string context_;
};

bool is_hex32(const std::string& s) {
  return s.size() == 32 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

ManifestTensor parse_tensor(const Reader& r, const std::string& name) {
  ManifestTensor t;
  t.dtype = r.string("dtype");
  const Json& shape = r.at("shape");
  if (!shape.is_array()) r.fail("shape", "is not a list");
  for (const auto& d : shape) {
    if (!is_non_negative_integer(d) || d.get<uint64_t>() > uint64_t{INT64_MAX}) {
      r.fail("shape", "of tensor '" + name + "' is not a list of sizes: " + shape.dump());
    }
    t.shape.push_back(d.get<int64_t>());
  }
  return t;
}

ManifestFile parse_file(const Reader& r) {
  ManifestFile f;
  f.path = r.string("path");
  if (!is_safe_relative_path(f.path))
    r.fail("path", "is not a relative path inside the checkpoint: " + f.path);
  f.size = r.unsigned_int("size");
  f.checksum = r.string("checksum");
  if (!is_hex32(f.checksum)) r.fail("checksum", "is not 32 lowercase hex digits: " + f.checksum);
  if (r.has("tensors")) {
    const Json& tensors = r.at("tensors");
    if (!tensors.is_object()) r.fail("tensors", "is not an object");
    for (const auto& [name, info] : tensors.items()) {
      f.tensors[name] =
          parse_tensor(Reader(info, r.where(), r.context() + ".tensors[\"" + name + "\"]"), name);
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
    for (const auto& [name, t] : tensors)
      tensors_json[name] = {{"dtype", t.dtype}, {"shape", t.shape}};
    entry["tensors"] = std::move(tensors_json);
  }
  return entry;
}

ManifestFile ManifestFile::from_json(const Json& j, const std::string& where) {
  return parse_file(Reader(j, where, ""));
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
  const Reader r(j, where.string(), "");
  Manifest m;
  const uint64_t version = r.unsigned_int("format_version");
  if (version > static_cast<uint64_t>(kManifestFormatVersion) || version == 0) {
    r.fail("format_version", "is " + std::to_string(version) + "; this hftrain reads version " +
                                 std::to_string(kManifestFormatVersion) +
                                 " (a newer hftrain wrote it?)");
  }
  m.format_version = static_cast<int>(version);
  const uint64_t step = r.unsigned_int("step");
  if (step > uint64_t{INT64_MAX}) r.fail("step", "is out of range");
  m.step = static_cast<int64_t>(step);
  m.config_hash = r.string("config_hash");
  const std::string algorithm = r.string("checksum_algorithm");
  if (algorithm != kChecksumAlgorithm) {
    r.fail("checksum_algorithm",
           "is \"" + algorithm + "\"; this hftrain knows \"" + kChecksumAlgorithm + "\"");
  }
  const Json& files = r.at("files");
  if (!files.is_array()) r.fail("files", "is not a list");
  std::set<std::string> seen;
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string context = "files[" + std::to_string(i) + "]";
    ManifestFile f = parse_file(Reader(files[i], r.where(), context));
    if (!seen.insert(f.path).second) r.fail(context + ".path", "repeats " + f.path);
    m.files.push_back(std::move(f));
  }
  if (r.has("extra")) m.extra = j.at("extra");
  return m;
}

const ManifestFile* Manifest::find(const std::string& path) const {
  for (const auto& f : files) {
    if (f.path == path) return &f;
  }
  return nullptr;
}

}  // namespace hftrain::ckpt
