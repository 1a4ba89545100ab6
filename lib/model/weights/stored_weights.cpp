#include "model/weights/stored_weights.h"

#include <algorithm>
#include <cstdio>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "model/weights/model_files.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/strings.h"
#include "util/json_depth.h"

namespace hftrain::model {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

}  // namespace

TensorListSource::TensorListSource(const TensorList& tensors, std::string where) : where_(std::move(where)) {
  for (const auto& [name, t] : tensors) tensors_[name] = t;
}

std::vector<std::string> TensorListSource::names() const {
  std::vector<std::string> out;
  for (const auto& entry : tensors_) out.push_back(entry.first);
  return out;
}

torch::Tensor TensorListSource::get(const std::string& name) const { return tensors_.at(name); }

bool has_model_weights(const fs::path& dir) {
  std::error_code ec;
  return fs::exists(dir / kModelWeightsFile, ec) || fs::exists(dir / kModelWeightsIndexFile, ec);
}

StoredWeights::StoredWeights(const fs::path& dir) {
  std::error_code ec;
  if (fs::exists(dir / kModelWeightsFile, ec) || !fs::exists(dir / kModelWeightsIndexFile, ec)) {
    where_ = dir / kModelWeightsFile;
    if (!fs::exists(where_, ec)) {
      throw util::CheckpointError(where_.string() + " is missing",
                                  "the model directory " + dir.string() +
                                      " has neither model.safetensors nor model.safetensors.index.json");
    }
    files_.push_back(std::make_unique<MappedSafetensors>(where_));
    for (const auto& e : files_.back()->header().tensors) tensors_[e.name] = {files_.back().get(), &e};
    return;
  }
  // The sharded layout: every listed shard must exist, and every tensor sit in exactly the shard
  // the index names.
  where_ = dir / kModelWeightsIndexFile;
  const std::string where = where_.string();
  const char* hint = "the index and its shards do not belong together, or the directory is damaged";
  const std::string index_text = util::read_file<util::CheckpointError>(where_, "weights index");
  const Json index = util::parse_json<util::CheckpointError>(index_text, where);
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object()) {
    throw util::CheckpointError(where + ": not a safetensors index (a JSON object with a \"weight_map\" object)", hint);
  }
  std::map<std::string, std::string> shard_of;
  std::set<std::string> shard_files;
  for (const auto& [name, shard] : index["weight_map"].items()) {
    const std::string file = shard.is_string() ? shard.get<std::string>() : "";
    if (file.empty() || file == "." || file == ".." || file.find('/') != std::string::npos) {
      throw util::CheckpointError(
          where + ": weight_map[\"" + name + "\"] is " + shard.dump() + ", not a file name in the same folder", hint);
    }
    shard_of[name] = file;
    shard_files.insert(file);
  }
  std::map<std::string, std::string> found_in;
  std::vector<std::string> unlisted, misplaced, duplicated;
  for (const auto& file : shard_files) {
    const fs::path shard_path = dir / file;
    if (!fs::exists(shard_path, ec))
      throw util::CheckpointError(where + " lists shard " + file + ", which is missing", hint);
    files_.push_back(std::make_unique<MappedSafetensors>(shard_path));
    for (const auto& e : files_.back()->header().tensors) {
      auto it = shard_of.find(e.name);
      if (it == shard_of.end()) {
        unlisted.push_back(e.name + " (in " + file + ")");
      } else if (!found_in.emplace(e.name, file).second) {
        duplicated.push_back(e.name + " (in " + found_in[e.name] + " and " + file + ")");
      } else if (it->second != file) {
        misplaced.push_back(e.name + " (in " + file + ", listed in " + it->second + ")");
      } else {
        tensors_[e.name] = {files_.back().get(), &e};
      }
    }
  }
  std::vector<std::string> absent;
  for (const auto& [name, file] : shard_of) {
    if (!found_in.count(name)) absent.push_back(name + " (listed in " + file + ")");
  }
  if (unlisted.empty() && misplaced.empty() && duplicated.empty() && absent.empty()) return;
  std::string message = where + " does not match its shards:";
  if (!absent.empty()) message += " missing " + describe_names(absent, 8, false) + ";";
  if (!unlisted.empty()) message += " not in the weight_map " + describe_names(unlisted, 8, false) + ";";
  if (!misplaced.empty()) message += " in the wrong shard " + describe_names(misplaced, 8, false) + ";";
  if (!duplicated.empty()) message += " in more than one shard " + describe_names(duplicated, 8, false) + ";";
  message.pop_back();
  throw util::CheckpointError(message, hint);
}

StoredWeights::~StoredWeights() = default;

std::vector<std::string> StoredWeights::names() const {
  std::vector<std::string> out;
  for (const auto& entry : tensors_) out.push_back(entry.first);
  return out;
}

const SafetensorsEntry& StoredWeights::entry(const std::string& name) const { return *tensors_.at(name).second; }

torch::Tensor StoredWeights::get(const std::string& name) const {
  const auto& [file, entry] = tensors_.at(name);
  return file->view(*entry);
}

WeightShards plan_weight_shards(const TensorList& tensors, uint64_t max_shard_bytes, const std::string& stem) {
  WeightShards out;
  out.shards.emplace_back();
  uint64_t shard_bytes = 0;
  for (const auto& [name, t] : tensors) {
    const uint64_t bytes = static_cast<uint64_t>(t.numel()) * t.element_size();
    if (!out.shards.back().empty() && shard_bytes + bytes > max_shard_bytes) {
      out.shards.emplace_back();
      shard_bytes = 0;
    }
    out.shards.back().emplace_back(name, t);
    shard_bytes += bytes;
    out.total_bytes += bytes;
  }
  const size_t n = out.shards.size();
  for (size_t i = 0; i < n; ++i) {
    char suffix[32];
    std::snprintf(suffix, sizeof(suffix), "-%05zu-of-%05zu", i + 1, n);
    out.files.push_back(stem + (n == 1 ? std::string() : std::string(suffix)) + ".safetensors");
  }
  return out;
}

std::string WeightShards::index_json() const {
  nlohmann::ordered_json weight_map = nlohmann::ordered_json::object();
  for (size_t i = 0; i < shards.size(); ++i) {
    for (const auto& entry : shards[i]) weight_map[entry.first] = files[i];
  }
  const nlohmann::ordered_json index{{"metadata", {{"total_size", total_bytes}}}, {"weight_map", weight_map}};
  return index.dump(2) + "\n";
}

void write_sharded_weights(const fs::path& dir, const TensorList& tensors, uint64_t max_shard_bytes,
                           const std::map<std::string, std::string>& metadata) {
  const WeightShards plan = plan_weight_shards(tensors, max_shard_bytes, "model");
  for (size_t i = 0; i < plan.shards.size(); ++i) write_safetensors(dir / plan.files[i], plan.shards[i], metadata);
  if (plan.shards.size() > 1) util::atomic_write_file(dir / kModelWeightsIndexFile, plan.index_json());
}

std::string describe_names(const std::vector<std::string>& names, size_t shown, bool fold_layers) {
  // Fold ".<number>." into ".*." and count how many names each pattern stands for.
  static const std::regex kLayer(R"(\.[0-9]+\.)");
  std::vector<std::string> order;
  std::map<std::string, std::vector<std::string>> groups;
  for (const auto& name : names) {
    const std::string pattern = fold_layers ? std::regex_replace(name, kLayer, ".*.") : name;
    if (groups[pattern].empty()) order.push_back(pattern);
    groups[pattern].push_back(name);
  }
  std::vector<std::string> items;
  for (const auto& pattern : order) {
    const auto& members = groups[pattern];
    items.push_back(members.size() == 1 ? members[0]
                                        : pattern + " (in " + std::to_string(members.size()) + " layers)");
  }
  std::vector<std::string> head(items.begin(), items.begin() + static_cast<long>(std::min(items.size(), shown)));
  std::string s = util::join(head, ", ");
  if (items.size() > shown) s += " and " + std::to_string(items.size() - shown) + " more";
  return s;
}

}  // namespace hftrain::model
