// A mixture-of-experts MLP (Mixtral, Qwen2-MoE, Qwen3-MoE): a router scores the experts for each
// token, the top experts_per_token of its softmax compute the token (their weights renormalised to
// sum to 1 where the spec says), and the outputs are summed by those weights. With a shared expert
// (Qwen2-MoE) every token also passes one gated MLP, scaled by sigmoid(shared_gate(x)), added.
//
// Experts are computed grouped: the tokens are sorted by expert once, and each expert runs one
// gated-MLP matmul pair over all of its tokens (as transformers' experts loop over the experts they
// hit), not a loop over tokens. The experts' weights are two 2-D parameters, the Hugging Face
// per-expert tensors stacked along rows, so that loading, export and ZeRO see ordinary matrices:
//   layers.N.moe.router           (n_experts, d_model)
//   layers.N.moe.experts_gate_up  (n_experts x 2 expert_d_ff, d_model): each expert's gate then up rows
//   layers.N.moe.experts_down     (n_experts x d_model, expert_d_ff)
// The shared expert is an ordinary MLP and a (1, d_model) Dense layer, which LoRA can adapt:
//   layers.N.moe.shared.{gate_up_proj,down_proj}, layers.N.moe.shared_gate
#pragma once

#include <cstdint>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include "model/dense.h"
#include "model/decoder/mlp.h"
#include "model/spec.h"
#include "model/decoder/tensor_parallel.h"

namespace hftrain::model {

// What the load-balancing loss needs of one MoE layer's forward (transformers'
// load_balancing_loss_func): tokens per expert over every top-k slot (no gradient), the router's
// probabilities summed over tokens (with gradient), and the tokens; with a token mask (a padded
// batch's attention mask, as transformers passes it) over the unmasked tokens only.
struct RouterStats {
  torch::Tensor counts;    // (n_experts) fp32
  torch::Tensor prob_sum;  // (n_experts) fp32
  torch::Tensor rows;      // () fp32: the tokens counted
};

// The load-balancing loss of a forward's MoE layers: n_experts x sum_e (counts_e / rows) x
// (prob_sum_e / rows), every layer's counts, probabilities and rows summed first.
torch::Tensor load_balancing_loss(const std::vector<RouterStats>& layers, int64_t n_experts);

// Which experts each token goes to, and with what weight.
struct Routing {
  torch::Tensor logits;   // (N, n_experts), the router's output in the activations' dtype
  torch::Tensor probs;    // (N, n_experts) fp32, its softmax
  torch::Tensor experts;  // (N, k) int64, in descending router probability
  torch::Tensor weights;  // (N, k)
};

class MoeImpl : public torch::nn::Module {
 public:
  explicit MoeImpl(const ModelSpec& spec);
  // x (B, T, C) -> (B, T, C).
  torch::Tensor forward(const torch::Tensor& x);
  // The router's choice for x (N, C), as transformers' top-k router makes it.
  Routing route(const torch::Tensor& x) const;
  // Keep each forward's chosen experts (N, k) for inspection (off by default; tests compare them
  // with transformers').
  void record_routing(bool on) { record_ = on; }
  // Each forward appends its RouterStats here while set (training with a load-balancing loss):
  // while gradients are on, or always (`without_grad`: the no-grad first pass of a checkpointed
  // block, whose statistics the checkpoint hands on with a gradient).
  void collect_stats(std::vector<RouterStats>* into, bool without_grad = false) {
    stats_ = into;
    stats_without_grad_ = without_grad;
  }
  const torch::Tensor& last_experts() const { return last_experts_; }
  // The tokens the statistics count: (N) nonzero for a token, zero for padding; undefined: all.
  void set_token_mask(torch::Tensor mask) { token_mask_ = std::move(mask); }
  // Tensor parallelism (tensor_parallel.h): each rank holds expert_d_ff / size of every expert's
  // hidden units (its rows of each expert's gate and up, its columns of each down) and of the
  // shared expert's; the router and the shared gate are whole. Every rank routes the whole input
  // alike and the experts' partial outputs are summed over the group.
  void set_tensor_parallel(TpGroup* group);

  torch::Tensor router;
  torch::Tensor experts_gate_up;
  torch::Tensor experts_down;
  Mlp shared{nullptr};  // the shared expert and its gate (Qwen2-MoE), or unset
  Dense shared_gate{nullptr};

 private:
  int64_t n_experts_, top_k_, d_ff_, d_model_;
  TpGroup* tp_ = nullptr;
  bool renormalize_;
  bool record_ = false;
  std::vector<RouterStats>* stats_ = nullptr;
  bool stats_without_grad_ = false;
  torch::Tensor last_experts_;
  torch::Tensor token_mask_;
};
TORCH_MODULE(Moe);

}  // namespace hftrain::model
