#include "parallel/tensor/tp_group.h"

#include <algorithm>
#include <map>

#include <torch/torch.h>

#include "util/error.h"

namespace hftrain::parallel {
namespace {

class CommTpGroup final : public model::TpGroup {
 public:
  CommTpGroup(Communicator& comm, bool sequence_parallel) : comm_(comm), sequence_parallel_(sequence_parallel) {}
  int rank() const override { return comm_.rank(); }
  int size() const override { return comm_.size(); }
  bool sequence_parallel() const override { return sequence_parallel_; }
  void all_reduce(torch::Tensor& tensor, bool max) override {
    comm_.all_reduce(tensor, max ? ReduceOp::kMax : ReduceOp::kSum)->wait();
  }
  void all_gather(torch::Tensor& output, const torch::Tensor& input) override {
    comm_.all_gather(output, input)->wait();
  }
  void reduce_scatter(torch::Tensor& output, const torch::Tensor& input) override {
    comm_.reduce_scatter(output, input)->wait();
  }

 private:
  Communicator& comm_;
  bool sequence_parallel_;
};

std::vector<model::TpSplit> splits_over(const SplitOf& split_of, const std::string& name, int size) {
  std::vector<model::TpSplit> out;
  for (int r = 0; r < size; ++r) out.push_back(split_of(name, r));
  return out;
}

// "<parameter>/<state key>" -> "<parameter>"
std::string parameter_of(const std::string& state_name) { return state_name.substr(0, state_name.rfind('/')); }

class SlicedState final : public SavedOptimizerState {
 public:
  SlicedState(const SavedOptimizerState& whole, SplitOf split_of, int rank)
      : whole_(whole), split_of_(std::move(split_of)), rank_(rank) {}
  const nlohmann::json& meta() const override { return whole_.meta(); }
  std::string source() const override { return whole_.source(); }
  std::vector<std::string> names() const override { return whole_.names(); }
  std::vector<int64_t> shape(const std::string& name) const override {
    std::vector<int64_t> shape = whole_.shape(name);
    const model::TpSplit split = split_for(name, shape);
    if (split.split()) shape[split.dim] = split.length();
    return shape;
  }
  torch::Tensor read(const std::string& name, int64_t offset, int64_t count) const override {
    const std::vector<int64_t> whole_shape = whole_.shape(name);
    const model::TpSplit split = split_for(name, whole_shape);
    if (!split.split()) return whole_.read(name, offset, count);
    if (piece_name_ != name) {  // one tensor at a time in host memory
      int64_t numel = 1;
      for (int64_t d : whole_shape) numel *= d;
      const torch::Tensor whole = whole_.read(name, 0, numel).view(whole_shape);
      piece_ = model::tp_take(whole, split).reshape({-1});
      piece_name_ = name;
    }
    if (offset < 0 || offset + count > piece_.numel()) {
      throw util::CheckpointError(source() + ": elements " + std::to_string(offset) + "-" +
                                      std::to_string(offset + count) + " of " + name + " lie outside this rank's piece",
                                  "the checkpoint does not fit this model");
    }
    return piece_.narrow(0, offset, count);
  }

 private:
  // The parameter's split where the state tensor has the parameter's whole shape (element-wise
  // state); whole otherwise (a step count).
  model::TpSplit split_for(const std::string& name, const std::vector<int64_t>& shape) const {
    model::TpSplit split = split_of_(parameter_of(name), rank_);
    if (!split.split() || static_cast<int64_t>(shape.size()) <= split.dim || shape[split.dim] != split.whole) return {};
    return split;
  }

  const SavedOptimizerState& whole_;
  SplitOf split_of_;
  int rank_;
  mutable std::string piece_name_;
  mutable torch::Tensor piece_;
};

// A state saved by tp_optimizer_pieces, its split parameters' tensors put together whole.
class AssembledState final : public SavedOptimizerState {
 public:
  AssembledState(const SavedOptimizerState& saved, const nlohmann::json& record, std::string record_file)
      : saved_(saved), record_file_(std::move(record_file)) {
    try {
      tp_size_ = record.at("tensor_parallel").get<int>();
      for (const auto& [name, ranks] : record.at("splits").items()) {
        std::vector<model::TpSplit> splits;
        for (const auto& r : ranks) {
          splits.push_back({r.at("dim").get<int64_t>(), r.at("whole").get<int64_t>(),
                            r.at("segments").get<std::vector<std::pair<int64_t, int64_t>>>()});
        }
        if (static_cast<int>(splits.size()) != tp_size_) throw std::runtime_error("one split per rank");
        splits_[name] = std::move(splits);
      }
    } catch (const std::exception& e) {
      throw util::CheckpointError(record_file_ + " is not a tensor-parallel layout record: " + e.what(),
                                  "the checkpoint is damaged; resume from another one");
    }
    for (const std::string& name : saved_.names()) {
      const size_t at = name.find("@tp");
      if (at == std::string::npos) {
        names_.push_back(name);
        continue;
      }
      const std::string param = name.substr(0, at), key = name.substr(name.rfind('/'));
      if (!splits_.count(param)) {
        throw util::CheckpointError(saved_.source() + " holds " + name + " but " + record_file_ +
                                        " has no split for " + param,
                                    "the checkpoint is damaged; resume from another one");
      }
      if (name.compare(at, 4, "@tp0") == 0 && name.find('/', at) == at + 4) names_.push_back(param + key);
    }
  }
  const nlohmann::json& meta() const override { return saved_.meta(); }
  std::string source() const override { return saved_.source(); }
  std::vector<std::string> names() const override {
    std::vector<std::string> sorted = names_;
    std::sort(sorted.begin(), sorted.end());
    return sorted;
  }
  std::vector<int64_t> shape(const std::string& name) const override {
    const auto it = splits_.find(parameter_of(name));
    if (it == splits_.end()) return saved_.shape(name);
    std::vector<int64_t> shape = saved_.shape(piece_name(name, 0));
    shape.at(it->second[0].dim) = it->second[0].whole;
    return shape;
  }
  torch::Tensor read(const std::string& name, int64_t offset, int64_t count) const override {
    const auto it = splits_.find(parameter_of(name));
    if (it == splits_.end()) return saved_.read(name, offset, count);
    if (assembled_name_ != name) {
      const std::vector<int64_t> whole_shape = shape(name);
      torch::Tensor whole;
      for (int r = 0; r < tp_size_; ++r) {
        const model::TpSplit& split = it->second[static_cast<size_t>(r)];
        std::vector<int64_t> piece_shape = saved_.shape(piece_name(name, r));
        int64_t numel = 1;
        for (int64_t d : piece_shape) numel *= d;
        const torch::Tensor piece = saved_.read(piece_name(name, r), 0, numel).view(piece_shape);
        if (!whole.defined()) whole = torch::empty(whole_shape, piece.options());
        int64_t at = 0;
        for (const auto& [seg_offset, length] : split.segments) {
          whole.narrow(split.dim, seg_offset, length).copy_(piece.narrow(split.dim, at, length));
          at += length;
        }
      }
      assembled_ = whole.reshape({-1});
      assembled_name_ = name;
    }
    return assembled_.narrow(0, offset, count);
  }

 private:
  std::string piece_name(const std::string& name, int rank) const {
    const std::string param = parameter_of(name);
    return param + "@tp" + std::to_string(rank) + name.substr(param.size());
  }
  const SavedOptimizerState& saved_;
  std::string record_file_;
  int tp_size_ = 1;
  std::map<std::string, std::vector<model::TpSplit>> splits_;
  std::vector<std::string> names_;
  mutable std::string assembled_name_;
  mutable torch::Tensor assembled_;
};

}  // namespace

std::shared_ptr<model::TpGroup> make_tp_group(Communicator& comm, bool sequence_parallel) {
  return std::make_shared<CommTpGroup>(comm, sequence_parallel);
}

TpWholeParameters::TpWholeParameters(std::vector<std::pair<std::string, torch::Tensor>> params, SplitOf split_of,
                                     model::TpGroup& group, Access access, const torch::Device& device)
    : access_(access) {
  torch::NoGradGuard no_grad;
  for (auto& [name, p] : params) {
    const std::vector<model::TpSplit> splits = splits_over(split_of, name, group.size());
    const model::TpSplit& mine = splits.at(static_cast<size_t>(group.rank()));
    if (!mine.split()) continue;
    torch::Tensor piece = p.detach();  // the parameter's own storage, to point it back at
    torch::Tensor whole;
    if (access == Access::kSave) {
      whole = model::tp_gather(piece.to(device), splits, group).to(piece.device());
    } else {
      std::vector<int64_t> shape = piece.sizes().vec();
      shape[mine.dim] = mine.whole;
      whole = torch::empty(shape, piece.options());
    }
    p.set_data(whole);
    swapped_.push_back({p, piece, mine});
  }
}

TpWholeParameters::~TpWholeParameters() {
  torch::NoGradGuard no_grad;
  for (auto& s : swapped_) {
    // After a load this rank's piece of what was read; after a save the piece it had.
    if (access_ == Access::kLoad) s.piece.copy_(model::tp_take(s.param.detach(), s.split));
    s.param.set_data(s.piece);
  }
}

LocalOptimizerState tp_optimizer_pieces(LocalOptimizerState local, const SplitOf& split_of, int tp_rank, int tp_size) {
  std::vector<StatePiece> kept;
  for (StatePiece& piece : local.pieces) {
    const std::string param = parameter_of(piece.name);
    if (split_of(param, tp_rank).split()) {
      piece.name = param + "@tp" + std::to_string(tp_rank) + piece.name.substr(param.size());
      kept.push_back(std::move(piece));
    } else if (tp_rank == 0) {  // the same on every rank of the group
      kept.push_back(std::move(piece));
    }
  }
  local.pieces = std::move(kept);
  if (local.file >= 0) local.file += tp_rank * local.num_files;
  local.num_files *= tp_size;
  return local;
}

nlohmann::json tp_layout_record(const std::vector<std::pair<std::string, torch::Tensor>>& params,
                                const SplitOf& split_of, int tp_size) {
  nlohmann::json splits = nlohmann::json::object();
  for (const auto& [name, p] : params) {
    if (!split_of(name, 0).split()) continue;
    nlohmann::json ranks = nlohmann::json::array();
    for (int r = 0; r < tp_size; ++r) {
      const model::TpSplit s = split_of(name, r);
      ranks.push_back({{"dim", s.dim}, {"whole", s.whole}, {"segments", s.segments}});
    }
    splits[name] = std::move(ranks);
  }
  return {{"tensor_parallel", tp_size}, {"splits", std::move(splits)}};
}

std::unique_ptr<SavedOptimizerState> assembled_optimizer_state(const SavedOptimizerState& saved,
                                                               const nlohmann::json& record,
                                                               const std::string& record_file) {
  return std::make_unique<AssembledState>(saved, record, record_file);
}

std::unique_ptr<SavedOptimizerState> sliced_optimizer_state(const SavedOptimizerState& whole, SplitOf split_of,
                                                            int rank) {
  return std::make_unique<SlicedState>(whole, std::move(split_of), rank);
}

}  // namespace hftrain::parallel
