#include "ckpt/writer.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <thread>
#include <stdexcept>

#include <torch/torch.h>

#include "ckpt/layout.h"
#include "model/weights/stored_weights.h"
#include "util/file_writer.h"
#include "util/fs.h"

namespace hftrain::ckpt {
namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

// "<step>:<n>" with both non-negative decimal integers; nullopt otherwise.
std::optional<std::pair<int64_t, int64_t>> parse_crash_hook(const std::string& value) {
  const size_t colon = value.find(':');
  if (colon == std::string::npos) return std::nullopt;
  auto number = [](std::string_view digits) -> std::optional<int64_t> {
    if (digits.empty() || digits.size() > 18 ||
        digits.find_first_not_of("0123456789") != std::string_view::npos) {
      return std::nullopt;
    }
    return std::stoll(std::string(digits));
  };
  auto step = number(std::string_view(value).substr(0, colon));
  auto n = number(std::string_view(value).substr(colon + 1));
  if (!step || !n) return std::nullopt;
  return std::make_pair(*step, *n);
}

}  // namespace

CheckpointWriter::CheckpointWriter(fs::path run_dir, int64_t step, const util::Environment& env)
    : run_dir_(std::move(run_dir)), step_(step) {
  if (step_ < 0)
    throw std::invalid_argument("CheckpointWriter: negative step " + std::to_string(step_));
  if (auto hook = env.get(kCrashHookEnv)) {
    if (auto parsed = parse_crash_hook(*hook); parsed && parsed->first == step_)
      crash_after_ = parsed->second;
  }
  if (auto slow = env.get(kSlowHookEnv)) {
    if (slow->size() <= 6 && !slow->empty() && slow->find_first_not_of("0123456789") == std::string::npos) {
      slow_ms_ = std::stoll(*slow);
    }
  }
  std::error_code ec;
  fs::create_directories(run_dir_, ec);
  if (ec) throw util::io_error("create the output folder", run_dir_, ec.value());
  staging_ = run_dir_ / (std::string(kStagingPrefix) + std::to_string(step_) + "-" +
                         std::to_string(::getpid()));
  fs::remove_all(staging_, ec);  // left by a crashed save of an earlier process with our pid
  if (::mkdir(staging_.c_str(), 0755) != 0) throw util::io_error("create", staging_, errno);
  crash_point();
}

CheckpointWriter::~CheckpointWriter() {
  if (committed_) return;
  std::error_code ec;
  fs::remove_all(staging_, ec);
}

void CheckpointWriter::crash_point() {
  if (crash_after_ && *crash_after_ == closed_files_) std::raise(SIGKILL);
  if (slow_ms_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(slow_ms_));
}

fs::path CheckpointWriter::begin_file(const std::string& name) {
  if (committed_) throw std::logic_error("CheckpointWriter: " + name + " added after commit()");
  if (!is_safe_relative_path(name) || name == kManifestFile) {
    throw std::invalid_argument("CheckpointWriter: bad file name '" + name + "'");
  }
  if (std::any_of(files_.begin(), files_.end(),
                  [&](const ManifestFile& f) { return f.path == name; })) {
    throw std::invalid_argument("CheckpointWriter: " + name + " added twice");
  }
  const fs::path path = staging_ / name;
  for (fs::path dir = path.parent_path(); dir != staging_; dir = dir.parent_path()) {
    if (std::find(subdirs_.begin(), subdirs_.end(), dir) != subdirs_.end()) break;
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      // A missing parent: create from the top down.
      std::error_code ec;
      fs::create_directories(dir, ec);
      if (ec) throw util::io_error("create", dir, ec.value());
    }
    subdirs_.push_back(dir);
  }
  return path;
}

void CheckpointWriter::end_file(util::FileWriter& out, const std::string& name,
                                std::map<std::string, ManifestTensor> tensors) {
  out.close();
  files_.push_back({name, out.size(), out.checksum(), std::move(tensors)});
  ++closed_files_;
  crash_point();
}

void CheckpointWriter::add_bytes(const std::string& name, std::string_view bytes) {
  util::FileWriter out(begin_file(name));
  out.write(bytes);
  end_file(out, name);
}

void CheckpointWriter::add_json(const std::string& name, const Json& value) {
  std::string text;
  try {
    text = value.dump(2) + "\n";
  } catch (const Json::exception& e) {
    throw std::invalid_argument("CheckpointWriter: " + name +
                                " cannot be written as JSON: " + e.what());
  }
  add_bytes(name, text);
}

void CheckpointWriter::add_safetensors(const std::string& name, const model::TensorList& tensors,
                                       const std::map<std::string, std::string>& metadata) {
  util::FileWriter out(begin_file(name));
  const model::SafetensorsHeader header = model::write_safetensors_to(out, tensors, metadata);
  std::map<std::string, ManifestTensor> recorded;
  for (const auto& t : header.tensors) recorded[t.name] = {t.dtype, t.shape};
  end_file(out, name, std::move(recorded));
}

void CheckpointWriter::add_sharded_safetensors(const std::string& stem,
                                               const model::TensorList& tensors,
                                               uint64_t max_shard_bytes,
                                               const std::map<std::string, std::string>& metadata) {
  const model::WeightShards plan = model::plan_weight_shards(tensors, max_shard_bytes, stem);
  for (size_t i = 0; i < plan.shards.size(); ++i) add_safetensors(plan.files[i], plan.shards[i], metadata);
  if (plan.shards.size() > 1) add_bytes(stem + ".safetensors.index.json", plan.index_json());
}

void CheckpointWriter::adopt_file(const fs::path& from, const ManifestFile& record) {
  const fs::path to = begin_file(record.path);
  std::error_code ec;
  const uintmax_t size = fs::file_size(from, ec);
  if (ec) throw util::io_error("find the staged file", from, ec.value());
  if (size != record.size) {
    throw util::IoError(from.string() + " has " + std::to_string(size) +
                            " bytes, its writer reported " + std::to_string(record.size),
                        "another process changed the staging folder; save again");
  }
  if (::rename(from.c_str(), to.c_str()) != 0)
    throw util::io_error("move into the checkpoint", from, errno);
  files_.push_back(record);
  ++closed_files_;
  crash_point();
}

fs::path CheckpointWriter::commit(const std::string& config_hash, const Json& extra) {
  if (committed_) throw std::logic_error("CheckpointWriter::commit called twice");
  Manifest manifest;
  manifest.step = step_;
  manifest.config_hash = config_hash;
  manifest.files = files_;
  manifest.extra = extra;
  {
    util::FileWriter out(staging_ / kManifestFile);
    out.write(manifest.to_json().dump(2) + "\n");
    out.close();
    ++closed_files_;
    crash_point();
  }
  // Deepest folders first, so each fsync makes the names below it durable before its parent's.
  std::vector<fs::path> dirs = subdirs_;
  std::sort(dirs.begin(), dirs.end(), [](const fs::path& a, const fs::path& b) {
    return std::distance(a.begin(), a.end()) > std::distance(b.begin(), b.end());
  });
  for (const auto& dir : dirs) util::fsync_dir(dir);
  util::fsync_dir(staging_);
  const fs::path final_dir = run_dir_ / checkpoint_dir_name(step_);
  util::publish_dir(staging_, final_dir);
  committed_ = true;
  util::fsync_dir(run_dir_);
  util::atomic_write_file(run_dir_ / kLatestFile, checkpoint_dir_name(step_) + "\n");
  return final_dir;
}

}  // namespace hftrain::ckpt
