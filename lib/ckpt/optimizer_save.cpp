#include "ckpt/optimizer_save.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "ckpt/layout.h"
#include "ckpt/optimizer_shards.h"
#include "util/error.h"
#include "util/file_writer.h"

namespace hftrain::ckpt {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

Json failure(const util::Error& e) {
  return {{"error", e.what()}, {"hint", e.hint()}};
}

// Every rank's `mine`, parsed. Messages may hold paths that are not UTF-8: replaced, not thrown.
std::vector<Json> all_gather_json(parallel::Communicator& comm, const Json& mine,
                                  const torch::Device& device) {
  std::vector<Json> out;
  for (const auto& text : parallel::all_gather_text(
           comm, mine.dump(-1, ' ', false, Json::error_handler_t::replace), device)) {
    out.push_back(Json::parse(text));
  }
  return out;
}

// The first failure among `records`, thrown on every rank: its own words on the rank that failed.
void throw_first_failure(const std::vector<Json>& records, int rank, const std::string& what) {
  for (size_t r = 0; r < records.size(); ++r) {
    if (!records[r].is_object() || !records[r].contains("error")) continue;
    const std::string message = records[r].at("error").get<std::string>();
    const std::string hint = records[r].at("hint").get<std::string>();
    if (static_cast<int>(r) == rank) throw util::IoError(message, hint);
    throw util::IoError("rank " + std::to_string(r) + " could not " + what + ": " + message, hint);
  }
}

}  // namespace

StagedOptimizer::~StagedOptimizer() {
  if (dir_.empty()) return;
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

StagedOptimizer::StagedOptimizer(StagedOptimizer&& other) noexcept
    : dir_(std::exchange(other.dir_, {})), handoff_(std::move(other.handoff_)) {}

OptimizerStaging::~OptimizerStaging() {
  if (!owner_) return;
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

OptimizerStaging::OptimizerStaging(OptimizerStaging&& other) noexcept
    : dir_(std::move(other.dir_)), rank_(other.rank_), owner_(std::exchange(other.owner_, false)) {}

OptimizerStaging& OptimizerStaging::operator=(OptimizerStaging&& other) noexcept {
  if (this != &other) {
    OptimizerStaging gone(std::move(*this));
    dir_ = std::move(other.dir_);
    rank_ = other.rank_;
    owner_ = std::exchange(other.owner_, false);
  }
  return *this;
}

OptimizerStaging open_optimizer_staging(const fs::path& run_dir, int64_t step, parallel::Communicator& comm,
                                        const torch::Device& device) {
  OptimizerStaging staging;
  staging.rank_ = comm.rank();
  // Rank 0 creates the folder; its pid names it.
  Json created = nullptr;
  if (staging.rank_ == 0) {
    const fs::path dir = optimizer_staging_dir(run_dir, step, ::getpid());
    try {
      std::error_code ec;
      fs::create_directories(run_dir, ec);
      if (ec) throw util::io_error("create the output folder", run_dir, ec.value());
      fs::remove_all(dir, ec);  // left by a crashed save of an earlier process with this pid
      if (::mkdir(dir.c_str(), 0755) != 0) throw util::io_error("create", dir, errno);
      staging.owner_ = true;
      created = {{"pid", ::getpid()}};
    } catch (const util::IoError& e) {
      created = failure(e);
    }
  }
  const Json from_main = all_gather_json(comm, created, device).front();
  throw_first_failure({from_main}, staging.rank_, "create the folder for the optimizer state");
  staging.dir_ = optimizer_staging_dir(run_dir, step, from_main.at("pid").get<int64_t>());
  return staging;
}

Json write_staged_shard(const OptimizerStaging& staging, const parallel::LocalOptimizerState& local) {
  if (local.file < 0) return nullptr;
  try {
    std::error_code ec;
    if (!fs::is_directory(staging.dir(), ec)) {
      throw util::IoError(
          "rank " + std::to_string(staging.rank()) + " cannot see " + staging.dir().string() +
              ", where rank 0 saves the optimizer state",
          "every rank writes its shard of the optimizer state into the run directory: a "
          "multi-node job needs run.output_dir on a filesystem that every node shares "
          "(NFS, Lustre, ...)");
    }
    return write_optimizer_shard(staging.dir(), local);
  } catch (const util::IoError& e) {
    return failure(e);
  } catch (const std::exception& e) {
    return failure(util::IoError(std::string("writing the optimizer shard failed: ") + e.what(),
                                 "report this as a bug"));
  }
}

StagedOptimizer close_optimizer_staging(OptimizerStaging&& staging, parallel::Communicator& comm,
                                        const torch::Device& device, const Json& mine, const Json& meta) {
  OptimizerStaging closing(std::move(staging));  // removed here when a rank failed
  StagedOptimizer staged;
  // Everyone learns what everyone wrote, and builds the same index (so a bug fails every rank).
  const std::vector<Json> records = all_gather_json(comm, mine, device);
  throw_first_failure(records, closing.rank_, "write its shard of the optimizer state");
  const OptimizerIndex index = index_optimizer_shards(records, meta);
  if (closing.rank_ == 0) {
    Json files = Json::array();
    for (const auto& r : records) {
      if (!r.is_null()) files.push_back(r.at("file"));
    }
    staged.handoff_ = {{"pid", ::getpid()}, {"files", std::move(files)}, {"index", index.to_json()}};
    staged.dir_ = closing.dir_;
    closing.owner_ = false;  // the StagedOptimizer owns it now
  }
  return staged;
}

StagedOptimizer stage_optimizer_shards(const fs::path& run_dir, int64_t step, parallel::Communicator& comm,
                                       const torch::Device& device, const parallel::LocalOptimizerState& local) {
  OptimizerStaging staging = open_optimizer_staging(run_dir, step, comm, device);
  const Json mine = write_staged_shard(staging, local);
  return close_optimizer_staging(std::move(staging), comm, device, mine, local.meta);
}

void adopt_optimizer_shards(CheckpointWriter& writer, const Json& handoff) {
  const fs::path dir = optimizer_staging_dir(writer.staging_dir().parent_path(), writer.step(),
                                             handoff.at("pid").get<int64_t>());
  for (const auto& f : handoff.at("files")) {
    const ManifestFile record =
        ManifestFile::from_json(f, "the record of a staged optimizer shard");
    writer.adopt_file(dir / fs::path(record.path).filename(), record);
  }
  writer.add_json(kOptimizerIndexFile, handoff.at("index"));
  std::error_code ec;
  fs::remove(dir, ec);  // empty now
}

}  // namespace hftrain::ckpt
