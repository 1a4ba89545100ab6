#include "ckpt/optimizer_index.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "ckpt/manifest.h"
#include "util/error.h"
#include "util/json_fields.h"

namespace hftrain::ckpt {
namespace {

using Json = nlohmann::json;

constexpr const char* kDamaged = "the checkpoint's optimizer state is damaged; resume from another checkpoint";

[[noreturn]] void fail(const std::string& where, const std::string& what) {
  throw util::CheckpointError(where + ": " + what, kDamaged);
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
  const util::JsonFields r(j, util::JsonPlace::top(where, util::ErrorKind::kCheckpoint, kDamaged));
  const int64_t format = r.integer("format", 0, INT64_MAX);
  if (format != kOptimizerIndexFormat) {
    r.fail("format", "is " + std::to_string(format) + "; this hftrain reads format " +
                         std::to_string(kOptimizerIndexFormat) + " (a newer hftrain wrote it?)");
  }
  OptimizerIndex index;
  const Json& files = r.array("files");
  for (size_t i = 0; i < files.size(); ++i) index.files.push_back(util::json_string(files[i], r.at("files")[i]));
  const util::JsonFields tensors = r.object("tensors");
  for (const auto& [name, t] : tensors.json().items()) {
    const util::JsonFields entry(t, tensors.at("'" + name + "'"));
    OptimizerTensor& out = index.tensors[name];
    const Json& shape = entry.array("shape");
    for (size_t i = 0; i < shape.size(); ++i)
      out.shape.push_back(util::json_int(shape[i], entry.at("shape")[i], 0, INT64_MAX));
    const Json& pieces = entry.array("pieces");
    for (size_t i = 0; i < pieces.size(); ++i) {
      const util::JsonPlace at = entry.at("pieces")[i];
      if (!pieces[i].is_array() || pieces[i].size() != 3) util::json_fail(at, "is not [file, offset, count]");
      out.pieces.push_back({static_cast<size_t>(util::json_int(pieces[i][0], at[0], 0, INT64_MAX)),
                            util::json_int(pieces[i][1], at[1], 0, INT64_MAX),
                            util::json_int(pieces[i][2], at[2], 0, INT64_MAX)});
    }
  }
  index.optimizer = r.object("optimizer").json();
  index.check(where);
  return index;
}

void OptimizerIndex::check(const std::string& where) {
  std::set<std::string> seen;
  for (const auto& f : files) {
    if (!is_safe_relative_path(f)) fail(where, "`files` holds \"" + f + "\", not a path inside the checkpoint");
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
    std::sort(t.pieces.begin(), t.pieces.end(), [](const OptimizerPiece& a, const OptimizerPiece& b) {
      return std::tie(a.offset, a.count) < std::tie(b.offset, b.count);
    });
    std::set<size_t> in_file;
    int64_t next = 0;
    for (const auto& p : t.pieces) {
      if (p.file >= files.size())
        fail(where, field + " has a piece in file " + std::to_string(p.file) + " of " + std::to_string(files.size()));
      if (!in_file.insert(p.file).second) fail(where, field + " has two pieces in " + files[p.file]);
      if (p.offset != next || p.count > t.numel() - p.offset) {
        fail(where, field + ": its pieces do not cover elements " + std::to_string(next) + ".." +
                        std::to_string(t.numel()) + " exactly once");
      }
      next = p.offset + p.count;
    }
    if (next != t.numel()) {
      fail(where,
           field + ": its pieces cover " + std::to_string(next) + " of " + std::to_string(t.numel()) + " elements");
    }
  }
}

std::vector<std::string> OptimizerIndex::mismatches(size_t file, const std::map<std::string, int64_t>& numels) const {
  std::vector<std::string> out;
  std::set<std::string> placed;
  for (const auto& [name, t] : tensors) {
    for (const auto& p : t.pieces) {
      if (p.file != file) continue;
      placed.insert(name);
      const auto it = numels.find(name);
      if (it == numels.end()) {
        out.push_back(files[file] + ": has no tensor " + name + ", which the optimizer index places there");
      } else if (it->second != p.count) {
        out.push_back(files[file] + ": " + name + " has " + std::to_string(it->second) +
                      " elements, the optimizer index says " + std::to_string(p.count));
      }
    }
  }
  for (const auto& [name, n] : numels) {
    if (!placed.count(name))
      out.push_back(files[file] + ": holds " + name + ", which the optimizer index does not place there");
  }
  return out;
}

OptimizerIndex legacy_optimizer_index(const std::string& file,
                                      const std::map<std::string, std::vector<int64_t>>& shapes, Json optimizer) {
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
