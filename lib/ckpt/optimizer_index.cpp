#include "ckpt/optimizer_index.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "ckpt/manifest.h"
#include "util/error.h"

namespace hftrain::ckpt {
namespace {

using Json = nlohmann::json;

[[noreturn]] void fail(const std::string& where, const std::string& what) {
  throw util::CheckpointError(
      where + ": " + what,
      "the checkpoint's optimizer state is damaged; resume from another checkpoint");
}

// A non-negative integer that fits int64 (parsed JSON gives unsigned numbers, built JSON signed).
int64_t count_of(const Json& v, const std::string& where, const std::string& field) {
  if (!(v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0)) ||
      v.get<uint64_t>() > uint64_t{INT64_MAX}) {
    fail(where, field + " is not a non-negative integer");
  }
  return v.get<int64_t>();
}

}  // namespace

int64_t OptimizerTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Json OptimizerIndex::to_json() const {
  Json tensors_json = Json::object();
  for (const auto& [name, t] : tensors) {
    Json pieces = Json::array();
    for (const auto& p : t.pieces) pieces.push_back({p.file, p.offset, p.count});
    tensors_json[name] = {{"shape", t.shape}, {"pieces", std::move(pieces)}};
  }
  return {{"format", kOptimizerIndexFormat},
          {"files", files},
          {"tensors", std::move(tensors_json)},
          {"optimizer", optimizer}};
}

OptimizerIndex OptimizerIndex::from_json(const Json& j, const std::string& where) {
  if (!j.is_object()) fail(where, "is not a JSON object");
  for (const char* key : {"format", "files", "tensors", "optimizer"}) {
    if (!j.contains(key)) fail(where, std::string("`") + key + "` is missing");
  }
  if (count_of(j.at("format"), where, "`format`") != kOptimizerIndexFormat) {
    fail(where, "`format` is " + j.at("format").dump() + "; this hftrain reads format " +
                    std::to_string(kOptimizerIndexFormat) + " (a newer hftrain wrote it?)");
  }
  OptimizerIndex index;
  const Json& files = j.at("files");
  if (!files.is_array()) fail(where, "`files` is not a list");
  for (const auto& f : files) {
    if (!f.is_string()) fail(where, "`files` holds " + f.dump() + ", not a path");
    index.files.push_back(f.get<std::string>());
  }
  const Json& tensors = j.at("tensors");
  if (!tensors.is_object()) fail(where, "`tensors` is not an object");
  for (const auto& [name, t] : tensors.items()) {
    const std::string field = "tensors[\"" + name + "\"]";
    if (!t.is_object() || !t.contains("shape") || !t.contains("pieces") ||
        !t.at("shape").is_array() || !t.at("pieces").is_array()) {
      fail(where, field + " is not {\"shape\": [...], \"pieces\": [...]}");
    }
    OptimizerTensor& out = index.tensors[name];
    for (const auto& d : t.at("shape")) out.shape.push_back(count_of(d, where, field + ".shape"));
    for (const auto& p : t.at("pieces")) {
      if (!p.is_array() || p.size() != 3)
        fail(where, field + ".pieces holds " + p.dump() + ", not [file, offset, count]");
      out.pieces.push_back({static_cast<size_t>(count_of(p[0], where, field + ".pieces")),
                            count_of(p[1], where, field + ".pieces"),
                            count_of(p[2], where, field + ".pieces")});
    }
  }
  if (!j.at("optimizer").is_object()) fail(where, "`optimizer` is not an object");
  index.optimizer = j.at("optimizer");
  index.check(where);
  return index;
}

void OptimizerIndex::check(const std::string& where) {
  std::set<std::string> seen;
  for (const auto& f : files) {
    if (!is_safe_relative_path(f))
      fail(where, "`files` holds \"" + f + "\", not a path inside the checkpoint");
    if (!seen.insert(f).second) fail(where, "`files` names " + f + " twice");
  }
  for (auto& [name, t] : tensors) {
    const std::string field = "tensors[\"" + name + "\"]";
    int64_t numel = 1;
    for (int64_t d : t.shape) {
      if (d != 0 && numel > INT64_MAX / d) fail(where, field + ".shape is too large");
      numel *= d;
    }
    // Empty pieces first where they share an offset, so that a reader looking for the piece that
    // holds an element finds the one that does.
    std::sort(t.pieces.begin(), t.pieces.end(),
              [](const OptimizerPiece& a, const OptimizerPiece& b) {
                return std::tie(a.offset, a.count) < std::tie(b.offset, b.count);
              });
    std::set<size_t> in_file;
    int64_t next = 0;
    for (const auto& p : t.pieces) {
      if (p.file >= files.size())
        fail(where, field + " has a piece in file " + std::to_string(p.file) + " of " +
                        std::to_string(files.size()));
      if (!in_file.insert(p.file).second)
        fail(where, field + " has two pieces in " + files[p.file]);
      if (p.offset != next || p.count > t.numel() - p.offset) {
        fail(where, field + ": its pieces do not cover elements " + std::to_string(next) + ".." +
                        std::to_string(t.numel()) + " exactly once");
      }
      next = p.offset + p.count;
    }
    if (next != t.numel()) {
      fail(where, field + ": its pieces cover " + std::to_string(next) + " of " +
                      std::to_string(t.numel()) + " elements");
    }
  }
}

std::vector<std::string> OptimizerIndex::mismatches(
    size_t file, const std::map<std::string, int64_t>& numels) const {
  std::vector<std::string> out;
  std::set<std::string> placed;
  for (const auto& [name, t] : tensors) {
    for (const auto& p : t.pieces) {
      if (p.file != file) continue;
      placed.insert(name);
      const auto it = numels.find(name);
      if (it == numels.end()) {
        out.push_back(files[file] + ": has no tensor " + name +
                      ", which the optimizer index places there");
      } else if (it->second != p.count) {
        out.push_back(files[file] + ": " + name + " has " + std::to_string(it->second) +
                      " elements, the optimizer index says " + std::to_string(p.count));
      }
    }
  }
  for (const auto& [name, n] : numels) {
    if (!placed.count(name))
      out.push_back(files[file] + ": holds " + name +
                    ", which the optimizer index does not place there");
  }
  return out;
}

OptimizerIndex legacy_optimizer_index(const std::string& file,
                                      const std::map<std::string, std::vector<int64_t>>& shapes,
                                      Json optimizer) {
  OptimizerIndex index;
  index.files = {file};
  index.optimizer = std::move(optimizer);
  for (const auto& [name, shape] : shapes) {
    OptimizerTensor& t = index.tensors[name];
    t.shape = shape;
    t.pieces = {{0, 0, t.numel()}};
  }
  index.check(file);
  return index;
}

}  // namespace hftrain::ckpt
