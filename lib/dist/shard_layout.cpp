#include "dist/shard_layout.h"

#include <algorithm>

#include <torch/torch.h>

#include "util/error.h"

namespace hftrain::dist {
namespace {

// Every state key the element-wise optimizers keep (adafactor is refused under zero).
const std::vector<std::string> kStateKeys = {"exp_avg", "exp_avg_sq", "max_exp_avg_sq", "momentum_buffer"};

}  // namespace

ShardLayout::ShardLayout(std::vector<Bucket> groups, int rank, std::vector<std::string> names,
                         std::vector<std::vector<int64_t>> shapes)
    : groups_(std::move(groups)), names_(std::move(names)), shapes_(std::move(shapes)) {
  pieces_ = shard_pieces(groups_, rank);
  piece_index_.assign(names_.size(), -1);
  for (size_t i = 0; i < pieces_.size(); ++i) piece_index_[pieces_[i].param] = static_cast<int64_t>(i);
}

const ShardPiece* ShardLayout::piece_of(size_t param) const {
  const int64_t k = piece_index_[param];
  return k < 0 ? nullptr : &pieces_[static_cast<size_t>(k)];
}

int64_t ShardLayout::numel(size_t param) const {
  int64_t n = 1;
  for (int64_t d : shapes_[param]) n *= d;
  return n;
}

size_t ShardLayout::index_of(const std::string& name) const {
  const auto it = std::find(names_.begin(), names_.end(), name);
  if (it == names_.end()) {
    throw util::CheckpointError("the optimizer state names `" + name + "`, which this model does not have",
                                "resume with the checkpoint's model");
  }
  return static_cast<size_t>(it - names_.begin());
}

optim::OptimizerState ShardLayout::gather(Communicator& comm, const optim::OptimizerState& local,
                                          const torch::TensorOptions& options) const {
  torch::NoGradGuard no_grad;
  const auto count_options = torch::TensorOptions().dtype(torch::kInt64);
  const auto n = static_cast<int64_t>(names_.size());
  // Which (parameter, key) pairs have state on some rank.
  auto present = torch::zeros({n, static_cast<int64_t>(kStateKeys.size())}, count_options);
  std::vector<std::vector<torch::Tensor>> have(names_.size(), std::vector<torch::Tensor>(kStateKeys.size()));
  for (const auto& [name, t] : local.tensors) {
    const size_t slash = name.rfind('/');
    const auto key = std::find(kStateKeys.begin(), kStateKeys.end(), name.substr(slash + 1));
    if (key == kStateKeys.end()) {
      throw util::CheckpointError("cannot gather the optimizer state `" + name + "` from the shards",
                                  "report this as a bug");
    }
    const size_t i = index_of(name.substr(0, slash));
    present[static_cast<int64_t>(i)][key - kStateKeys.begin()] = 1;
    have[i][static_cast<size_t>(key - kStateKeys.begin())] = t;
  }
  auto present_all = present.to(options.device());
  comm.all_reduce(present_all, ReduceOp::kMax)->wait();
  present = present_all.cpu();
  // Every key group by group: each rank contributes its chunk, all-gathered into the whole.
  std::vector<std::vector<torch::Tensor>> whole(names_.size(), std::vector<torch::Tensor>(kStateKeys.size()));
  for (size_t k = 0; k < kStateKeys.size(); ++k) {
    if (present.select(1, static_cast<int64_t>(k)).sum().item<int64_t>() == 0) continue;
    for (size_t g = 0; g < groups_.size(); ++g) {
      auto own = torch::zeros({groups_[g].chunk()}, options.dtype(torch::kFloat32));
      for (const auto& piece : pieces_) {
        const auto& t = have[piece.param][k];
        if (piece.bucket == g && t.defined()) own.narrow(0, piece.chunk_offset, piece.numel).copy_(t.reshape(-1));
      }
      auto full = torch::empty({groups_[g].padded_numel}, own.options());
      comm.all_gather(full, own)->wait();
      for (const auto& e : groups_[g].entries) {
        if (present[static_cast<int64_t>(e.param)][static_cast<int64_t>(k)].item<int64_t>() == 0) continue;
        whole[e.param][k] = full.narrow(0, e.offset, e.numel).view(shapes_[e.param]).cpu().clone();
      }
    }
  }
  optim::OptimizerState out;
  for (size_t i = 0; i < names_.size(); ++i) {
    for (size_t k = 0; k < kStateKeys.size(); ++k) {
      if (whole[i][k].defined()) out.tensors.emplace_back(names_[i] + "/" + kStateKeys[k], whole[i][k]);
    }
  }
  // Step counts: a rank without a piece of a parameter has none for it; the others agree.
  out.meta = local.meta;
  if (local.meta.contains("steps")) {
    auto steps = torch::zeros({n}, count_options);
    for (const auto& [name, s] : local.meta["steps"].items()) steps[static_cast<int64_t>(index_of(name))] = s.get<int64_t>();
    auto steps_all = steps.to(options.device());
    comm.all_reduce(steps_all, ReduceOp::kMax)->wait();
    steps = steps_all.cpu();
    nlohmann::json merged = nlohmann::json::object();
    for (size_t i = 0; i < names_.size(); ++i) {
      if (const int64_t s = steps[static_cast<int64_t>(i)].item<int64_t>(); s > 0) merged[names_[i]] = s;
    }
    out.meta["steps"] = merged;
  }
  return out;
}

optim::OptimizerState ShardLayout::slice(const optim::OptimizerState& whole) const {
  optim::OptimizerState shard;
  shard.meta = whole.meta;
  for (const auto& [name, t] : whole.tensors) {
    const size_t slash = name.rfind('/');
    const size_t i = index_of(name.substr(0, slash));
    if (t.numel() != numel(i)) {
      throw util::CheckpointError("optimizer state `" + name + "` has " + std::to_string(t.numel()) +
                                      " elements, the parameter " + std::to_string(numel(i)),
                                  "resume with the checkpoint's model shape");
    }
    const ShardPiece* piece = piece_of(i);
    auto flat = t.reshape(-1);
    shard.tensors.emplace_back(name, piece ? flat.narrow(0, piece->param_offset, piece->numel) : flat.narrow(0, 0, 0));
  }
  return shard;
}

}  // namespace hftrain::dist
