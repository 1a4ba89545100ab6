#include "model/decoder/tensor_parallel.h"

#include <map>
#include <mutex>
#include <utility>

#include <torch/torch.h>
#ifdef HFTRAIN_HAVE_CUDA
#include <ATen/cuda/CUDAGeneratorImpl.h>
#endif

#include "util/error.h"

namespace hftrain::model {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The group travels through the autograd context as an integer (the context holds IValues).
int64_t as_key(TpGroup& group) { return reinterpret_cast<int64_t>(&group); }
TpGroup& group_of(AutogradContext* ctx) { return *reinterpret_cast<TpGroup*>(ctx->saved_data["group"].toInt()); }

torch::Tensor summed(const torch::Tensor& x, TpGroup& group) {
  torch::Tensor out = x.contiguous().clone();
  group.all_reduce(out);
  return out;
}

// (B, T / N, C) slices of every rank -> (B, T, C), rank r's slice at rows r T / N.
torch::Tensor gather_sequence(const torch::Tensor& x, TpGroup& group) {
  const int64_t n = group.size();
  auto chunks = torch::empty({n * x.numel()}, x.options());
  group.all_gather(chunks, x.contiguous());
  return chunks.view({n, x.size(0), x.size(1), x.size(2)}).permute({1, 0, 2, 3}).reshape(
      {x.size(0), n * x.size(1), x.size(2)});
}

// (B, T, C) partial sums -> this rank's slice (B, T / N, C) of their sum.
torch::Tensor scatter_sequence(const torch::Tensor& x, TpGroup& group) {
  const int64_t n = group.size();
  if (x.size(1) % n != 0) {
    throw util::ConfigError("distributed.sequence_parallel splits each sequence over " + std::to_string(n) +
                                " ranks, but a batch holds sequences of " + std::to_string(x.size(1)) + " positions",
                            "make data.seq_len (with data.packing=pad: data.pad_to_multiple_of) a multiple of "
                            "distributed.tensor_parallel, or turn distributed.sequence_parallel off");
  }
  const int64_t t = x.size(1) / n;
  auto chunks = x.reshape({x.size(0), n, t, x.size(2)}).permute({1, 0, 2, 3}).contiguous();
  auto out = torch::empty({x.size(0), t, x.size(2)}, x.options());
  group.reduce_scatter(out, chunks);
  return out;
}

class Enter : public torch::autograd::Function<Enter> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, int64_t group) {
    ctx->saved_data["group"] = group;
    TpGroup& g = group_of(ctx);
    return g.sequence_parallel() ? gather_sequence(x, g) : x.view_as(x);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    TpGroup& g = group_of(ctx);
    return {g.sequence_parallel() ? scatter_sequence(grads[0], g) : summed(grads[0], g), torch::Tensor()};
  }
};

class Leave : public torch::autograd::Function<Leave> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, int64_t group) {
    ctx->saved_data["group"] = group;
    TpGroup& g = group_of(ctx);
    return g.sequence_parallel() ? scatter_sequence(x, g) : summed(x, g);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    TpGroup& g = group_of(ctx);
    return {g.sequence_parallel() ? gather_sequence(grads[0], g) : grads[0], torch::Tensor()};
  }
};

class SumGrad : public torch::autograd::Function<SumGrad> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, int64_t group) {
    ctx->saved_data["group"] = group;
    return x.view_as(x);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {summed(grads[0], group_of(ctx)), torch::Tensor()};
  }
};

// A sum over the group whose result every rank uses for its own part (the projection norm's mean
// square): all-reduce forward, and the gradient all-reduced backward too.
class SumBoth : public torch::autograd::Function<SumBoth> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, int64_t group) {
    ctx->saved_data["group"] = group;
    return summed(x, group_of(ctx));
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {summed(grads[0], group_of(ctx)), torch::Tensor()};
  }
};

// This process's tensor-parallel streams: the seed, and each device's state once drawn from.
struct Streams {
  std::mutex mutex;
  bool seeded = false;
  uint64_t seed = 0;
  std::map<std::pair<int, int>, torch::Tensor> states;  // (device type, index) -> generator state
};
Streams& streams() {
  static Streams s;
  return s;
}
std::pair<int, int> key_of(const torch::Device& d) {
  return {static_cast<int>(d.type()), d.has_index() ? d.index() : -1};
}

at::Generator default_generator(const torch::Device& device) {
#ifdef HFTRAIN_HAVE_CUDA
  if (device.is_cuda()) return at::cuda::detail::getDefaultCUDAGenerator(device.has_index() ? device.index() : -1);
#endif
  TORCH_CHECK(device.is_cpu(), "tensor-parallel random streams: no generator for ", device.str());
  return at::detail::getDefaultCPUGenerator();
}

}  // namespace

namespace tp_rng {

void seed(uint64_t value) {
  Streams& s = streams();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.seeded = true;
  s.seed = value;
  s.states.clear();
}

void reset() {
  Streams& s = streams();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.seeded = false;
  s.states.clear();
}

bool active() {
  Streams& s = streams();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.seeded;
}

torch::Tensor state(const torch::Device& device) {
  Streams& s = streams();
  std::lock_guard<std::mutex> lock(s.mutex);
  const auto it = s.states.find(key_of(device));
  return it == s.states.end() ? torch::Tensor() : it->second.clone();
}

void set_state(const torch::Device& device, const torch::Tensor& state) {
  Streams& s = streams();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (state.defined()) {
    s.states[key_of(device)] = state.clone();
  } else {
    s.states.erase(key_of(device));
  }
}

}  // namespace tp_rng

TpRngFork::TpRngFork(const torch::Device& device, bool on) : device_(device) {
  if (!on || !tp_rng::active()) return;
  at::Generator gen = default_generator(device_);
  std::lock_guard<std::mutex> lock(gen.mutex());
  saved_ = gen.get_state();
  const torch::Tensor mine = tp_rng::state(device_);
  if (mine.defined()) {
    gen.set_state(mine);
  } else {  // the stream's first use on this device
    gen.set_current_seed(streams().seed);
  }
}

TpRngFork::~TpRngFork() {
  if (!saved_.defined()) return;
  at::Generator gen = default_generator(device_);
  std::lock_guard<std::mutex> lock(gen.mutex());
  tp_rng::set_state(device_, gen.get_state());
  gen.set_state(saved_);
}

torch::Tensor tp_enter(const torch::Tensor& x, TpGroup& group) { return Enter::apply(x, as_key(group)); }
torch::Tensor tp_leave(const torch::Tensor& x, TpGroup& group) { return Leave::apply(x, as_key(group)); }
torch::Tensor tp_sum_grad(const torch::Tensor& x, TpGroup& group) { return SumGrad::apply(x, as_key(group)); }
torch::Tensor tp_sum(const torch::Tensor& x, TpGroup& group) { return SumBoth::apply(x, as_key(group)); }

torch::Tensor row_parallel_linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                                  TpGroup& group) {
  const torch::Tensor out = tp_leave(torch::nn::functional::linear(x, weight), group);
  if (!bias.defined()) return out;
  // Under sequence parallelism each rank adds the bias to its slice of the sequence only.
  return out + (group.sequence_parallel() ? tp_sum_grad(bias, group) : bias);
}

VocabSlice vocab_slice(int64_t vocab, int rank, int size) {
  const int64_t base = vocab / size, extra = vocab % size;
  const int64_t begin = rank * base + std::min<int64_t>(rank, extra);
  return {begin, begin + base + (rank < extra ? 1 : 0), vocab};
}

torch::Tensor vocab_parallel_embedding(const torch::Tensor& ids, const torch::Tensor& table, const VocabSlice& slice,
                                       int64_t padding_idx) {
  const auto outside = ids.lt(slice.begin).logical_or(ids.ge(slice.end));
  const auto local = (ids - slice.begin).masked_fill(outside, 0);
  const bool mine = padding_idx >= slice.begin && padding_idx < slice.end;
  return torch::embedding(table, local, mine ? padding_idx - slice.begin : -1).masked_fill(outside.unsqueeze(-1), 0);
}

}  // namespace hftrain::model
