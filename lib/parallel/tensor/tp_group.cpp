#include "parallel/tensor/tp_group.h"

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
  void all_gather(torch::Tensor& output, const torch::Tensor& input) override { comm_.all_gather(output, input)->wait(); }
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
    auto it = pieces_.find(name);
    if (it == pieces_.end()) {
      int64_t numel = 1;
      for (int64_t d : whole_shape) numel *= d;
      const torch::Tensor whole = whole_.read(name, 0, numel).view(whole_shape);
      it = pieces_.emplace(name, model::tp_take(whole, split).reshape({-1})).first;
    }
    if (offset < 0 || offset + count > it->second.numel()) {
      throw util::CheckpointError(source() + ": elements " + std::to_string(offset) + "-" +
                                      std::to_string(offset + count) + " of " + name + " lie outside this rank's piece",
                                  "the checkpoint does not fit this model");
    }
    return it->second.narrow(0, offset, count);
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
  mutable std::map<std::string, torch::Tensor> pieces_;
};

}  // namespace

std::shared_ptr<model::TpGroup> make_tp_group(Communicator& comm, bool sequence_parallel) {
  return std::make_shared<CommTpGroup>(comm, sequence_parallel);
}

TpWholeParameters::TpWholeParameters(std::vector<std::pair<std::string, torch::Tensor>> params, SplitOf split_of,
                                     model::TpGroup& group, Access access)
    : access_(access) {
  torch::NoGradGuard no_grad;
  for (auto& [name, p] : params) {
    const std::vector<model::TpSplit> splits = splits_over(split_of, name, group.size());
    const model::TpSplit& mine = splits.at(static_cast<size_t>(group.rank()));
    if (!mine.split()) continue;
    torch::Tensor piece = p.detach().clone();
    torch::Tensor whole;
    if (access == Access::kSave) {
      whole = model::tp_gather(piece, splits, group);
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

LocalOptimizerState gather_optimizer_state(LocalOptimizerState local, const SplitOf& split_of,
                                           const std::vector<std::pair<std::string, torch::Tensor>>& params,
                                           model::TpGroup& group) {
  std::map<std::string, torch::Tensor> by_name(params.begin(), params.end());
  torch::NoGradGuard no_grad;
  for (StatePiece& piece : local.pieces) {
    const std::string param = parameter_of(piece.name);
    const std::vector<model::TpSplit> splits = splits_over(split_of, param, group.size());
    const model::TpSplit& mine = splits.at(static_cast<size_t>(group.rank()));
    if (!mine.split()) continue;
    const auto it = by_name.find(param);
    if (it == by_name.end() || !piece.data.sizes().equals(it->second.sizes()) || piece.offset != 0) {
      throw util::ConfigError("the optimizer state " + piece.name +
                                  " is not shaped as its parameter, so tensor parallelism cannot put it together "
                                  "from the ranks' pieces",
                              "use an optimizer with element-wise state (adamw, sgd, lion, adagrad, rmsprop, "
                              "schedule_free_adamw) with distributed.tensor_parallel");
    }
    piece.data = model::tp_gather(piece.data.contiguous(), splits, group);
    piece.shape = piece.data.sizes().vec();
  }
  if (group.rank() != 0) local.file = -1;  // the group's rank 0 writes what every rank now holds
  return local;
}

std::unique_ptr<SavedOptimizerState> sliced_optimizer_state(const SavedOptimizerState& whole, SplitOf split_of,
                                                            int rank) {
  return std::make_unique<SlicedState>(whole, std::move(split_of), rank);
}

}  // namespace hftrain::parallel
