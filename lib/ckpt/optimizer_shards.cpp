#include "ckpt/optimizer_shards.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include <torch/torch.h>

#include "ckpt/layout.h"
#include "ckpt/manifest.h"
#include "model/weights/safetensors.h"
#include "util/error.h"
#include "util/file_writer.h"
#include "util/fs.h"
#include "util/json_depth.h"

namespace hftrain::ckpt {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

const char* kDamaged =
    "the checkpoint is incomplete or damaged: run `hftrain verify` on it, and resume from another";

Json read_json_file(const fs::path& path, const std::string& what) {
  const std::string text = util::read_file<util::CheckpointError>(path, what);
  Json j = util::parse_json<util::CheckpointError>(text, path.string());
  if (j.is_discarded() || !j.is_object())
    throw util::CheckpointError(path.string() + " is not a JSON object", kDamaged);
  return j;
}

int64_t numel_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// Reads ranges of the tensors an index places in files, mapping each file on first use.
class MappedOptimizerState final : public parallel::SavedOptimizerState {
 public:
  MappedOptimizerState(fs::path dir, fs::path source, OptimizerIndex index)
      : dir_(std::move(dir)), source_(std::move(source)), index_(std::move(index)), files_(index_.files.size()),
        entries_(files_.size()) {}

  const Json& meta() const override { return index_.optimizer; }
  std::string source() const override { return source_.string(); }
  std::vector<std::string> names() const override {
    std::vector<std::string> out;
    for (const auto& entry : index_.tensors) out.push_back(entry.first);
    return out;
  }
  std::vector<int64_t> shape(const std::string& name) const override { return tensor(name).shape; }

  torch::Tensor read(const std::string& name, int64_t offset, int64_t count) const override {
    const OptimizerTensor& t = tensor(name);
    if (offset < 0 || count < 0 || offset > t.numel() - count) {
      throw util::CheckpointError("the optimizer state `" + name + "` has " +
                                      std::to_string(t.numel()) + " elements; elements " +
                                      std::to_string(offset) + ".." +
                                      std::to_string(offset + count) + " were asked for",
                                  "resume with the checkpoint's model shape");
    }
    // The optimizer copies what it loads into its own dtype, so an empty range needs no file.
    if (count == 0) return torch::empty({0}, torch::kFloat32);
    // The pieces overlapping [offset, offset + count): from the last one starting at or before
    // offset.
    auto it = std::upper_bound(t.pieces.begin(), t.pieces.end(), offset,
                               [](int64_t o, const OptimizerPiece& p) { return o < p.offset; });
    --it;
    const int64_t end = offset + count;
    torch::Tensor out;
    for (; it != t.pieces.end() && it->offset < end; ++it) {
      if (it->count == 0) continue;
      const int64_t from = std::max(offset, it->offset);
      const int64_t to = std::min(end, it->offset + it->count);
      auto part = piece(name, *it).narrow(0, from - it->offset, to - from);
      if (to - from == count) return part;  // one piece holds the whole range: a view, no copy
      if (!out.defined()) {
        out = torch::empty({count}, part.options());
      } else if (part.scalar_type() != out.scalar_type()) {
        // Pieces of one tensor are written in one dtype: copy_ would convert a damaged one.
        throw util::CheckpointError((dir_ / index_.files[it->file]).string() + ": the piece of the optimizer state `" +
                                        name + "` holds " + std::string(c10::toString(part.scalar_type())) +
                                        ", its other pieces " + std::string(c10::toString(out.scalar_type())),
                                    kDamaged);
      }
      out.narrow(0, from - offset, to - from).copy_(part);
    }
    return out;
  }

 private:
  const OptimizerTensor& tensor(const std::string& name) const {
    const auto it = index_.tensors.find(name);
    if (it == index_.tensors.end())
      throw util::CheckpointError("the optimizer state has no tensor `" + name + "`", kDamaged);
    return it->second;
  }

  // The piece's elements, flattened: a view of the mapped file.
  torch::Tensor piece(const std::string& name, const OptimizerPiece& p) const {
    const model::MappedSafetensors& file = open(p.file);
    // open() checked that it is there with p.count elements.
    return file.view(*entries_[p.file].at(name)).reshape(-1);
  }

  const model::MappedSafetensors& open(size_t i) const {
    if (files_[i]) return *files_[i];
    const fs::path path = dir_ / index_.files[i];
    std::unique_ptr<model::MappedSafetensors> file;
    try {
      file = std::make_unique<model::MappedSafetensors>(path);
    } catch (const util::CheckpointError& e) {
      throw util::CheckpointError(
          e.what(), std::string(kDamaged) +
                        "; every rank's shard must be there (a multi-node run needs its run "
                        "directory on a filesystem that every node shares)");
    }
    std::map<std::string, int64_t> numels;
    for (const auto& e : file->header().tensors) numels[e.name] = numel_of(e.shape);
    const std::vector<std::string> problems = index_.mismatches(i, numels);
    if (!problems.empty()) {
      throw util::CheckpointError(path.string() + " does not match " +
                                      (dir_ / kOptimizerIndexFile).string() + ": " +
                                      problems.front() + (problems.size() > 1 ? " (and more)" : ""),
                                  kDamaged);
    }
    for (const auto& e : file->header().tensors) entries_[i].emplace(e.name, &e);
    files_[i] = std::move(file);
    return *files_[i];
  }

  fs::path dir_;
  fs::path source_;
  OptimizerIndex index_;
  mutable std::vector<std::unique_ptr<model::MappedSafetensors>> files_;  // mapped on first use
  // Per file: its header's entries by name (a lookup per piece read, not a scan).
  mutable std::vector<std::unordered_map<std::string, const model::SafetensorsEntry*>> entries_;
};

}  // namespace

Json write_optimizer_shard(const fs::path& dir, const parallel::LocalOptimizerState& local) {
  const std::string name = optimizer_shard_name(local.file, local.num_files);
  model::TensorList tensors;
  Json pieces = Json::object();
  for (const auto& p : local.pieces) {
    tensors.emplace_back(p.name, p.data);
    pieces[p.name] = {{"shape", p.shape}, {"offset", p.offset}, {"count", p.data.numel()}};
  }
  util::FileWriter out(dir / fs::path(name).filename());
  const model::SafetensorsHeader header = model::write_safetensors_to(out, tensors);
  out.close();
  util::fsync_dir(dir);
  ManifestFile file{name, out.size(), out.checksum(), {}};
  for (const auto& t : header.tensors) file.tensors[t.name] = {t.dtype, t.shape};
  return {{"file", file.to_json()},
          {"pieces", std::move(pieces)},
          {"steps", local.meta.value("steps", Json())}};
}

OptimizerIndex index_optimizer_shards(const std::vector<Json>& records, Json meta) {
  const std::string where = "the optimizer shards of this save";
  OptimizerIndex index;
  std::vector<const Json*> written;
  for (const auto& r : records) {
    if (!r.is_null()) written.push_back(&r);
  }
  // In file order (the names sort so), whichever ranks wrote them.
  auto path = [](const Json* r) { return r->at("file").at("path").get<std::string>(); };
  std::sort(written.begin(), written.end(),
            [&](const Json* a, const Json* b) { return path(a) < path(b); });
  Json steps = Json::object();
  for (const Json* r : written) {
    const size_t file = index.files.size();
    index.files.push_back(path(r));
    for (const auto& [name, p] : r->at("pieces").items()) {
      OptimizerTensor& t = index.tensors[name];
      const auto shape = p.at("shape").get<std::vector<int64_t>>();
      if (!t.pieces.empty() && t.shape != shape) {
        throw util::CheckpointError(where + " give `" + name + "` two shapes",
                                    "report this as a bug");
      }
      t.shape = shape;
      t.pieces.push_back({file, p.at("offset").get<int64_t>(), p.at("count").get<int64_t>()});
    }
    if (r->at("steps").is_object()) {
      for (const auto& [name, s] : r->at("steps").items())
        steps[name] = std::max(steps.value(name, int64_t{0}), s.get<int64_t>());
    }
  }
  for (size_t i = 0; i < index.files.size(); ++i) {
    if (index.files[i] !=
        optimizer_shard_name(static_cast<int>(i), static_cast<int>(index.files.size()))) {
      throw util::CheckpointError(where + " are not numbered 0.." +
                                      std::to_string(index.files.size() - 1) + ": " +
                                      index.files[i],
                                  "report this as a bug");
    }
  }
  if (meta.is_object() && meta.contains("steps")) meta["steps"] = steps;
  index.optimizer = std::move(meta);
  try {
    index.check(where);
  } catch (const util::CheckpointError& e) {
    throw util::CheckpointError(e.what(), "report this as a bug");
  }
  return index;
}

std::unique_ptr<parallel::SavedOptimizerState> open_saved_optimizer(const fs::path& dir) {
  std::error_code ec;
  const fs::path index_path = dir / kOptimizerIndexFile;
  if (fs::exists(index_path, ec)) {
    return std::make_unique<MappedOptimizerState>(
        dir, index_path, OptimizerIndex::from_json(read_json_file(index_path, "optimizer index"), index_path.string()));
  }
  const fs::path legacy = dir / kLegacyOptimizerTensors;
  if (!fs::exists(legacy, ec)) {
    throw util::CheckpointError(
        dir.string() + " holds no optimizer state (" + kOptimizerIndexFile + ")", kDamaged);
  }
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto& e : model::read_safetensors_header(legacy).tensors) shapes[e.name] = e.shape;
  Json meta = read_json_file(dir / kLegacyOptimizerMeta, "optimizer meta");
  return std::make_unique<MappedOptimizerState>(
      dir, legacy, legacy_optimizer_index(kLegacyOptimizerTensors, shapes, std::move(meta)));
}

}  // namespace hftrain::ckpt
