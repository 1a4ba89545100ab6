#include "model/decoder/moe.h"

#include <torch/torch.h>

namespace hftrain::model {
namespace F = torch::nn::functional;

torch::Tensor load_balancing_loss(const std::vector<RouterStats>& layers, int64_t n_experts) {
  torch::Tensor counts, probs, rows;
  for (const auto& l : layers) {
    counts = counts.defined() ? counts + l.counts : l.counts;
    probs = probs.defined() ? probs + l.prob_sum : l.prob_sum;
    rows = rows.defined() ? rows + l.rows : l.rows;
  }
  if (!counts.defined()) return {};
  rows = rows.clamp_min(1);  // a batch of padding only: no tokens, no loss
  return (counts / rows * (probs / rows)).sum() * static_cast<double>(n_experts);
}

MoeImpl::MoeImpl(const ModelSpec& spec)
    : n_experts_(spec.n_experts),
      top_k_(spec.experts_per_token),
      d_ff_(spec.expert_d_ff),
      d_model_(spec.d_model),
      renormalize_(spec.moe_renormalize) {
  router = register_parameter("router", torch::zeros({n_experts_, d_model_}));
  experts_gate_up = register_parameter("experts_gate_up", torch::zeros({n_experts_ * 2 * d_ff_, d_model_}));
  experts_down = register_parameter("experts_down", torch::zeros({n_experts_ * d_model_, d_ff_}));
  if (spec.shared_expert_d_ff > 0) {
    shared = register_module("shared", Mlp(spec, spec.shared_expert_d_ff));
    shared_gate = register_module("shared_gate", Dense(d_model_, 1, /*bias=*/false));
  }
}

void MoeImpl::set_tensor_parallel(TpGroup* group) {
  tp_ = group;
  d_ff_ /= group->size();
  if (shared) shared->set_tensor_parallel(group);
}

Routing MoeImpl::route(const torch::Tensor& x) const {
  Routing r;
  // Under tensor parallelism each rank's experts give part of the router's gradient: summed.
  r.logits = F::linear(x, tp_ ? tp_sum_grad(router, *tp_) : router);  // (N, E)
  // The softmax in fp32, the top-k of its probabilities (transformers' TopKRouter).
  r.probs = torch::softmax(r.logits, -1, torch::kFloat32);
  auto [top, experts] = r.probs.topk(top_k_, -1);
  if (renormalize_) top = top / top.sum(-1, /*keepdim=*/true);
  r.experts = experts;
  r.weights = top;
  return r;
}

torch::Tensor MoeImpl::forward(const torch::Tensor& input) {
  // Under tensor parallelism every rank routes the whole input (with sequence parallelism
  // gathered from the slices) and computes its part of each expert.
  const torch::Tensor x = tp_ ? tp_enter(input, *tp_) : input;
  const auto shape = x.sizes().vec();
  const auto flat = x.reshape({-1, d_model_});  // (N, C)
  const Routing r = route(flat);
  if (record_) last_experts_ = r.experts.detach().clone();
  // Each (token, slot) assignment, grouped by expert: one sort, one count per expert.
  const auto assigned = r.experts.reshape({-1});  // (N k)
  const auto per_expert = torch::bincount(assigned, {}, n_experts_);
  if (stats_ && (torch::GradMode::is_enabled() || stats_without_grad_)) {  // training, not generation
    // Every rank of a tensor-parallel group computes the same load-balancing loss, and the
    // router's gradients are summed over the group: each rank passes on 1 / size of its gradient.
    const auto shared_grad = [this](const torch::Tensor& t) {
      return tp_ ? t.detach() + (t - t.detach()) / static_cast<double>(tp_->size()) : t;
    };
    if (token_mask_.defined() && token_mask_.numel() == flat.size(0)) {
      const auto w = token_mask_.to(torch::kFloat32);  // (N)
      stats_->push_back(
          RouterStats{torch::bincount(assigned, w.repeat_interleave(top_k_), n_experts_).to(torch::kFloat32),
                      shared_grad((r.probs * w.unsqueeze(1)).sum(0)), w.sum()});
    } else {
      stats_->push_back(RouterStats{per_expert.to(torch::kFloat32), shared_grad(r.probs.sum(0)),
                                    torch::scalar_tensor(static_cast<double>(flat.size(0)),
                                                         r.probs.options())});
    }
  }
  // optional<bool>: a plain `true` would pick the sort(dim, descending) overload.
  const auto order = std::get<1>(assigned.sort(std::optional<bool>(true), 0, false));  // by expert, then token
  const auto counts = per_expert.to(torch::kCPU);  // the one host read
  const auto tokens = order.div(top_k_, "floor");
  const auto weights = r.weights.reshape({-1}).index_select(0, order);  // fp32
  auto out = torch::zeros_like(flat);
  const auto gate_up = experts_gate_up.view({n_experts_, 2 * d_ff_, d_model_});
  const auto down = experts_down.view({n_experts_, d_model_, d_ff_});
  const int64_t* count = counts.data_ptr<int64_t>();
  int64_t start = 0;
  for (int64_t e = 0; e < n_experts_; ++e) {
    const int64_t n = count[e];
    if (n == 0) continue;
    const auto rows = tokens.narrow(0, start, n);
    const auto h = F::linear(flat.index_select(0, rows), gate_up[e]).chunk(2, -1);  // gate, up
    auto y = F::linear(F::silu(h[0]) * h[1], down[e]);                                // (n, C)
    // Scaled by the router weight (fp32), added into the token's row in the activations' dtype.
    y = (y * weights.narrow(0, start, n).unsqueeze(1)).to(out.scalar_type());
    out.index_add_(0, rows, y);
    start += n;
  }
  if (!tp_) {
    if (shared) out = out + torch::sigmoid(shared_gate(flat)) * shared(flat);  // as transformers adds it
    return out.view(shape);
  }
  // The experts' partial sums over the group (with sequence parallelism: this rank's slice); the
  // shared expert enters and leaves the group on its own, on this rank's input.
  torch::Tensor summed = tp_leave(out.view(shape), *tp_);
  if (shared) {
    const torch::Tensor gate = tp_->sequence_parallel() ? tp_sum_grad(shared_gate->weight, *tp_) : shared_gate->weight;
    summed = summed + torch::sigmoid(F::linear(input, gate)) * shared(input);
  }
  return summed;
}

}  // namespace hftrain::model
