#include "parallel/comm/communicator.h"

#include <cstring>

#include <torch/torch.h>

#include "util/error.h"

namespace hftrain::parallel {
namespace {

class DoneWork final : public Work {
 public:
  void wait() override {}
};

}  // namespace

WorkPtr LocalCommunicator::all_reduce(torch::Tensor&, ReduceOp) { return std::make_shared<DoneWork>(); }

WorkPtr LocalCommunicator::reduce_scatter(torch::Tensor& output, const torch::Tensor& input, ReduceOp) {
  if (!output.is_same(input)) output.copy_(input.view_as(output));
  return std::make_shared<DoneWork>();
}

WorkPtr LocalCommunicator::all_gather(torch::Tensor& output, const torch::Tensor& input) {
  if (!output.is_same(input)) output.copy_(input.view_as(output));
  return std::make_shared<DoneWork>();
}

WorkPtr LocalCommunicator::broadcast(torch::Tensor&, int) { return std::make_shared<DoneWork>(); }

WorkPtr LocalCommunicator::exchange(const std::vector<PeerTransfer>& transfers) {
  if (transfers.empty()) return std::make_shared<DoneWork>();
  throw util::DistributedError("a point-to-point transfer in a world of one rank (there is no peer)",
                               "this is a bug in hftrain: please report it");
}

void wait_all(const std::vector<WorkPtr>& works) {
  for (const auto& w : works) {
    if (w) w->wait();
  }
}

int64_t all_reduce_value(Communicator& comm, int64_t value, ReduceOp op, const torch::Device& device) {
  if (comm.size() == 1) return value;
  auto t = torch::full({1}, value, torch::TensorOptions().dtype(torch::kInt64).device(device));
  comm.all_reduce(t, op)->wait();
  return t.item<int64_t>();
}

std::vector<std::string> all_gather_text(Communicator& comm, const std::string& text, const torch::Device& device) {
  if (comm.size() == 1) return {text};
  // The lengths first, then every text padded to the longest (all_gather takes equal sizes).
  const auto on_device = torch::TensorOptions().device(device);
  auto length = torch::full({1}, static_cast<int64_t>(text.size()), on_device.dtype(torch::kInt64));
  auto lengths = torch::empty({comm.size()}, length.options());
  comm.all_gather(lengths, length)->wait();
  lengths = lengths.cpu();
  const int64_t longest = std::max<int64_t>(1, lengths.max().item<int64_t>());
  auto mine = torch::zeros({longest}, torch::kUInt8);
  std::memcpy(mine.data_ptr(), text.data(), text.size());
  mine = mine.to(device);
  auto all = torch::empty({comm.size() * longest}, mine.options());
  comm.all_gather(all, mine)->wait();
  all = all.cpu();
  std::vector<std::string> out;
  const auto* bytes = static_cast<const char*>(all.data_ptr());
  for (int r = 0; r < comm.size(); ++r) {
    out.emplace_back(bytes + r * longest, static_cast<size_t>(lengths[r].item<int64_t>()));
  }
  return out;
}

}  // namespace hftrain::parallel
