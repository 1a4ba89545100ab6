// Tensor parallelism as the model's layers see it (Megatron-LM's layers): the ranks of a group each
// hold a slice of every block's matrices, and the activations pass between the slices through the
// autograd operations below. The collectives come from parallel/tensor (over a Communicator); the
// model stage knows only the TpGroup interface.
//
// A block's two halves (attention, MLP) each begin with tp_enter (identity forward, all-reduce of
// the input's gradient backward) before their column-parallel layers (q/k/v, gate/up: each rank
// its heads and its d_ff columns) and end with tp_leave (all-reduce forward, identity backward)
// after their row-parallel layers (the attention output and down projections); a row-parallel
// bias is added once, after tp_leave. With sequence parallelism the stream between the halves (the
// norms, the dropout, the residual adds) holds rank r's slice r of the sequence: tp_enter
// all-gathers it (backward: reduce-scatter) and tp_leave reduce-scatters (backward: all-gather).
#pragma once

#include <cstdint>

#include <torch/types.h>

namespace hftrain::model {

class TpGroup {
 public:
  virtual ~TpGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual bool sequence_parallel() const = 0;
  // Blocking collectives over the group on contiguous tensors. all_reduce: in place (sum or max).
  virtual void all_reduce(torch::Tensor& tensor, bool max = false) = 0;
  // `output` holds size() chunks of input.numel() elements, chunk r rank r's input.
  virtual void all_gather(torch::Tensor& output, const torch::Tensor& input) = 0;
  // `input` holds size() chunks of output.numel() elements; rank r receives the sum of chunk r.
  virtual void reduce_scatter(torch::Tensor& output, const torch::Tensor& input) = 0;
};

// Into column-parallel layers: x (B, T, C), or with sequence parallelism (B, T / size, C) gathered
// to (B, T, C).
torch::Tensor tp_enter(const torch::Tensor& x, TpGroup& group);
// Out of row-parallel layers: the partial sums (B, T, C) summed over the group, or with sequence
// parallelism reduce-scattered to this rank's (B, T / size, C).
torch::Tensor tp_leave(const torch::Tensor& x, TpGroup& group);
// A replicated parameter (or any tensor) whose gradient each rank sees only part of (a norm over a
// slice of the sequence, a per-head norm over a slice of the heads): identity forward, the
// gradient summed over the group backward.
torch::Tensor tp_sum_grad(const torch::Tensor& x, TpGroup& group);
// A sum over the group that each rank goes on to use for its own part (a norm's mean square over
// features split across the group): all-reduce forward, the gradient all-reduced backward.
torch::Tensor tp_sum(const torch::Tensor& x, TpGroup& group);
// A row-parallel linear layer: x (this rank's input features) times this rank's columns of
// `weight`, summed over the group by tp_leave, and `bias` (whole, may be undefined) added once.
torch::Tensor row_parallel_linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                                  TpGroup& group);

// The rows [begin, end) of a vocabulary of `vocab` rows that `rank` of `size` holds, in rank order:
// vocab / size rows each, one more on the first vocab % size ranks (a vocabulary that the size
// does not divide, as GPT-2's 50257, splits unevenly; every rank holds a row while vocab >= size).
struct VocabSlice {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t vocab = 0;  // the whole vocabulary
  int64_t rows() const { return end - begin; }
};
VocabSlice vocab_slice(int64_t vocab, int rank, int size);

// The embedding rows of `ids` from this rank's slice of the table (`table` holds rows
// [slice.begin, slice.end)), zeros for ids outside it: partial sums that tp_leave completes.
// `padding_idx` (an id of the whole vocabulary, or -1) gets no gradient, as torch's Embedding's.
torch::Tensor vocab_parallel_embedding(const torch::Tensor& ids, const torch::Tensor& table, const VocabSlice& slice,
                                       int64_t padding_idx = -1);

// The output layer over a vocabulary split across the group (lm_head_loss.h): this rank's logits
// are its slice's, and the softmax's max, normaliser and target logit are reduced over the group,
// so that no rank holds the whole (tokens x vocabulary) logits.
struct VocabParallel {
  TpGroup* group = nullptr;
  VocabSlice slice;
};

// Random numbers under tensor parallelism (as Megatron-LM's RNG tracker). The default generators
// are seeded alike on every rank of a group (and set from the group's rank 0 after a resume), so the regions every rank
// computes whole (the embedding's dropout and, without sequence parallelism, the residual dropout) draw the same
// numbers on every rank, and the group trains one model. A region a rank computes alone
// (attention dropout over its heads; with sequence parallelism the dropout over its slice of the
// sequence) draws from this rank's own stream instead: a TpRngFork swaps the stream in for the
// region. The streams are per process (one rank each), one per device.
namespace tp_rng {
// Starts this rank's streams from `seed` (call once per rank, with a seed of its own).
void seed(uint64_t seed);
// No streams, as in a process without tensor parallelism (tests).
void reset();
bool active();
// The stream's state on `device` (undefined before its first use), and setting it (resume, and the
// activation checkpoint's recomputation; undefined: as before its first use).
torch::Tensor state(const torch::Device& device);
void set_state(const torch::Device& device, const torch::Tensor& state);
}  // namespace tp_rng

// Within its scope the default generator of `device` draws from this rank's stream (nothing when
// `on` is false or no stream was seeded).
class TpRngFork {
 public:
  explicit TpRngFork(const torch::Device& device, bool on = true);
  ~TpRngFork();
  TpRngFork(const TpRngFork&) = delete;
  TpRngFork& operator=(const TpRngFork&) = delete;

 private:
  torch::Device device_;
  torch::Tensor saved_;  // the default generator's state, put back at the end
};

}  // namespace hftrain::model
