#include "model/decoder/tp_plan.h"

#include <torch/torch.h>

namespace hftrain::model {
namespace {

bool is_either(const std::string& name, const std::string& module) {
  return name.ends_with(module + ".weight") || name.ends_with(module + ".bias");
}

// Rank r's equal part of each block of `blocks` (sizes along `dim`, laid out one after another).
TpSplit parts_of(int64_t dim, const std::vector<int64_t>& blocks, int rank, int size) {
  TpSplit split;
  split.dim = dim;
  for (int64_t block : blocks) {
    const int64_t part = block / size;
    split.segments.emplace_back(split.whole + part * rank, part);
    split.whole += block;
  }
  return split;
}

}  // namespace

int64_t TpSplit::length() const {
  int64_t n = 0;
  for (const auto& s : segments) n += s.second;
  return n;
}

TpSplit decoder_tp_split(const ModelSpec& spec, const std::string& name, int rank, int size) {
  if (size <= 1) return {};
  const int64_t d = spec.head_dim();
  if (is_either(name, "attn.qkv_proj")) {
    return parts_of(0, {spec.n_head * d, spec.n_kv_head * d, spec.n_kv_head * d}, rank, size);
  }
  if (name.ends_with("attn.o_proj.weight")) return parts_of(1, {spec.n_head * d}, rank, size);
  if (spec.qk_norm == config::QkNorm::kProjection) {  // OLMo 2: each rank its heads' norm weights
    if (name.ends_with("attn.q_norm.weight")) return parts_of(0, {spec.n_head * d}, rank, size);
    if (name.ends_with("attn.k_norm.weight")) return parts_of(0, {spec.n_kv_head * d}, rank, size);
  }
  if (is_either(name, "mlp.gate_up_proj")) return parts_of(0, {spec.d_ff, spec.d_ff}, rank, size);
  // A mixture of experts: each rank its part of every expert's hidden units (gate then up rows of
  // each expert, down's columns), and of the shared expert's; the router and shared gate whole.
  if (name.ends_with("moe.experts_gate_up")) {
    return parts_of(0, std::vector<int64_t>(static_cast<size_t>(2 * spec.n_experts), spec.expert_d_ff), rank, size);
  }
  if (name.ends_with("moe.experts_down")) return parts_of(1, {spec.expert_d_ff}, rank, size);
  if (is_either(name, "moe.shared.gate_up_proj")) {
    return parts_of(0, {spec.shared_expert_d_ff, spec.shared_expert_d_ff}, rank, size);
  }
  if (name.ends_with("moe.shared.down_proj.weight")) return parts_of(1, {spec.shared_expert_d_ff}, rank, size);
  if (is_either(name, "mlp.up_proj")) return parts_of(0, {spec.d_ff}, rank, size);
  if (name.ends_with("mlp.down_proj.weight")) return parts_of(1, {spec.d_ff}, rank, size);
  if (name == "embed_tokens.weight" || name == "lm_head.weight") {
    const VocabSlice slice = vocab_slice(spec.vocab_size, rank, size);
    return TpSplit{0, spec.vocab_size, {{slice.begin, slice.rows()}}};
  }
  return {};
}

TpSplit encoder_tp_split(const BertSpec& spec, const std::string& name, int rank, int size) {
  if (size <= 1) return {};
  if (name.ends_with("embeddings.word_embeddings.weight")) {
    const VocabSlice slice = vocab_slice(spec.vocab_size, rank, size);
    return TpSplit{0, spec.vocab_size, {{slice.begin, slice.rows()}}};
  }
  if (name.find(".encoder.layer.") == std::string::npos) return {};
  const int64_t c = spec.hidden_size, f = spec.intermediate_size;
  for (const char* proj : {"attention.self.query", "attention.self.key", "attention.self.value"}) {
    if (is_either(name, proj)) return parts_of(0, {c}, rank, size);
  }
  if (name.ends_with("attention.output.dense.weight")) return parts_of(1, {c}, rank, size);
  if (is_either(name, "intermediate.dense")) return parts_of(0, {f}, rank, size);
  if (name.ends_with(".output.dense.weight")) return parts_of(1, {f}, rank, size);  // the layer's output
  return {};
}

TpShare tp_share(const ModelSpec& s) {
  const int64_t c = s.d_model, q = s.n_head * s.head_dim(), qkv = (s.n_head + 2 * s.n_kv_head) * s.head_dim();
  const int64_t ff = s.gated_mlp() ? 2 * s.d_ff : s.d_ff;  // gate and up
  // OLMo 2's q and k norms over all heads split with the heads.
  const int64_t qk_norms = s.qk_norm == config::QkNorm::kProjection ? (s.n_head + s.n_kv_head) * s.head_dim() : 0;
  const int64_t attention = qkv * c + (s.qkv_bias() ? qkv : 0) + c * q + qk_norms;
  const int64_t mlp = ff * c + (s.mlp_biases() ? ff : 0) + c * s.d_ff;
  // A mixture of experts: every expert's gate, up and down, and the shared expert's MLP.
  const int64_t experts = s.n_experts * 3 * c * s.expert_d_ff + 3 * c * s.shared_expert_d_ff;
  TpShare share;
  share.split = s.vocab_size * c * (s.tie_embeddings ? 1 : 2);
  for (int64_t i = 0; i < s.n_layer; ++i) share.split += attention + (s.layer_is_moe(i) ? experts : mlp);
  share.whole = s.parameter_count() - share.split;
  return share;
}

TpShare tp_share(const BertSpec& s) {
  const int64_t c = s.hidden_size, f = s.intermediate_size;
  const int64_t layer = 3 * (c * c + c) + c * c + (c * f + f) + f * c;
  TpShare share;
  share.split = s.num_hidden_layers * layer + s.vocab_size * c;
  share.whole = s.parameter_count() - share.split;
  return share;
}

torch::Tensor tp_take(const torch::Tensor& whole, const TpSplit& split) {
  if (!split.split()) return whole;
  std::vector<torch::Tensor> pieces;
  for (const auto& [offset, length] : split.segments) pieces.push_back(whole.narrow(split.dim, offset, length));
  return torch::cat(pieces, split.dim).contiguous();
}

void keep_pieces(const std::vector<std::pair<std::string, torch::Tensor>>& params,
                 const std::function<TpSplit(const std::string&, int, int)>& split_of, int rank, int size) {
  torch::NoGradGuard no_grad;
  for (const auto& [name, p] : params) {
    const TpSplit split = split_of(name, rank, size);
    if (split.split()) torch::Tensor(p).set_data(tp_take(p.detach(), split));
  }
}

torch::Tensor tp_gather(const torch::Tensor& piece, const std::vector<TpSplit>& splits, TpGroup& group) {
  const TpSplit& mine = splits.at(static_cast<size_t>(group.rank()));
  if (!mine.split()) return piece;
  // Pieces may differ in size (an uneven vocabulary): each goes out padded to the largest.
  int64_t across = 1;  // elements per index of `dim`
  for (int64_t i = 0; i < piece.dim(); ++i) across *= i == mine.dim ? 1 : piece.size(i);
  int64_t largest = 0;
  for (const auto& s : splits) largest = std::max(largest, s.length() * across);
  auto padded = torch::zeros({largest}, piece.options());
  padded.narrow(0, 0, piece.numel()).copy_(piece.reshape({-1}));
  auto all = torch::empty({largest * group.size()}, piece.options());
  group.all_gather(all, padded);
  std::vector<int64_t> shape = piece.sizes().vec();
  shape[mine.dim] = mine.whole;
  auto whole = torch::empty(shape, piece.options());
  for (size_t r = 0; r < splits.size(); ++r) {
    std::vector<int64_t> piece_shape = piece.sizes().vec();
    piece_shape[mine.dim] = splits[r].length();
    const auto theirs = all.narrow(0, static_cast<int64_t>(r) * largest, splits[r].length() * across).view(piece_shape);
    int64_t at = 0;
    for (const auto& [offset, length] : splits[r].segments) {
      whole.narrow(mine.dim, offset, length).copy_(theirs.narrow(mine.dim, at, length));
      at += length;
    }
  }
  return whole;
}

}  // namespace hftrain::model
